"""autograder: release, check, batch grade and report the course labs.

``from autograder import checker`` is what a lab notebook imports (``check =
checker("pytorch", "<student id>")``); ``python -m autograder --help`` lists the
instructor's commands.
"""
from .check import check, checker

__all__ = ["check", "checker"]
