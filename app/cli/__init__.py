"""The `divergence` command line: the terminal front end, beside the web app, above engine and minimizer.

main.py parses and dispatches (check, show, export, serve); localize.py has probe and localize;
minimize.py has minimize and install-shrinkray. Nothing here imports torch before a command needs it.
"""
