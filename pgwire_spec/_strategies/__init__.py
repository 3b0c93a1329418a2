"""The implementation behind :mod:`pgwire_spec.strategies` (private: import the facade)."""
