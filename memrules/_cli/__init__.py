"""The command line (``memrules``) and its commands: demo, eval and datasets."""
