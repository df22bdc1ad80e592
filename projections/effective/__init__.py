"""Effective tool sets (DESIGN.md section 3 and 5): for each subject, which tools it sees, where each came
from, and whether it is enabled.

The rule is stated once, in SQL: `projections/sql/effective_set.sql` (ranking and exposure), which every
read and every refresh runs. The modules here:

- reads.py: the sets and their explanations for now or any past position, from the history tables;
- dirty.py: dirty tracking, the projection part that works out the subjects each batch can change;
- maintenance.py: `Maintenance`, the one entry point the projector calls to keep the materialized sets
  (`effective_tools`, `effective_documents`) valid, and `FastPaths`, the switches of the speed-ups;
- rebuild.py: the SQL refresh of some subjects' sets, the set-based rebuild of all, and the check of the
  materialized sets against a recomputation;
- reach.py: who a grant holder reaches (dirty tracking and the fast paths);
- fast_grants.py, fast_ways.py: FAST PATHS, Python refreshes of a follower's frequent small batches that
  copy the rule's ranking and exposure order; each can be switched off, and a property test holds them
  to the SQL.
"""
