"""The dashboard's parts (:mod:`pyconductor.dashboard` is the app of routes):
its data layer (``reads``), its pages (``pages``, over ``markup``), who may use
it (``auth``) and its live updates (``events``). They need the 'dashboard' extra.
"""
