"""``python -m robot_dynamics ...``: the robot-dynamics command-line tool (see cli.py)."""
import sys

from .tools.cli import main

sys.exit(main())
