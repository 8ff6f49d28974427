"""Optimal exciting motions for dynamic identification (seed 000 Eq. 14, seed 003 §III)."""
