"""Development tools, not runtime modules: a private PostgreSQL cluster
(:mod:`pyconductor.dev.devdb`) and a demo workload (:mod:`pyconductor.dev.demo`).

A worker or a client never imports them; the command line, the tests and the
scripts of the repository do (``pyconductor devdb``, ``pyconductor demo``).
"""
