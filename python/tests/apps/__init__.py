"""Apps the acceptance tests run with ``pyconductor worker --app apps.<module>:app``."""
