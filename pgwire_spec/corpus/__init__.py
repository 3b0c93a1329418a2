"""The seed corpus shared by the conformance suite and the fuzz campaigns: streams with
their negotiated context (built-in, golden fixtures, regression findings), the field map of
a payload, and examples drawn from the hypothesis strategies.

Below both users: conformance builds its cases from it, fuzz mutates and generates from it,
and neither imports the other for it.
"""
