"""Physically consistent identification: link consistency, LMI, QP and seed 004."""
