"""What each ``pyconductor`` subcommand does, one module per area.

:mod:`pyconductor.cli` only parses: each subcommand's parser names its runner
here, a function taking the parsed namespace and returning the exit code.
"""
