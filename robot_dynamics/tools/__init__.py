"""The tools layer: the command-line tool, plots, the demo and sample robots."""
