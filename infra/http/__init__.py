"""`toolcat serve`: one process owns the home's read model and answers over HTTP (FastAPI on uvicorn).

state.py owns the DuckDB file and the follower thread; app.py assembles the routes (reads.py, writes.py,
watch.py, sql.py, operators.py) with auth.py, problems.py and limits.py; server.py runs it. The command
line's side: address.py (where a home's server listens) and remote.py (reads sent to it).
"""
