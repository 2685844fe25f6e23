"""writing-rl: judge-based rewards for stock verl."""

__version__ = "0.1.0"
