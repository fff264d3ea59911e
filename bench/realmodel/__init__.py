"""The parts of bench/real_model.py: the server and its log, and one module per bench (eval, turns, frontends, stop)."""
