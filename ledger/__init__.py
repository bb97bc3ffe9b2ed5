"""ledger: analytic (FLOPs, bytes) models behind the course, standard library only."""
__version__ = "0.1.0"
