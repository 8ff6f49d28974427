"""Physically consistent identification: link consistency, LMI, QP and the Maestro arm note."""
