"""autograder: release, check, batch grade and report the course labs.

``from autograder import check`` is what a lab notebook imports;
``python -m autograder --help`` lists the instructor's commands.
"""
from .check import check

__all__ = ["check"]
