"""The `rmq` command line: thin typer apps that parse, call one API and render."""
