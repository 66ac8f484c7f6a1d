"""The command line, ``python -m agents ...``: a thin layer over the library, one module per
group of commands."""
