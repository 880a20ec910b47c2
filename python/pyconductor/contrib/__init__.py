"""Integrations of pyconductor with other frameworks, each imported only where used
(its framework is an extra, never a dependency of the core): :mod:`pyconductor.contrib.django`."""
