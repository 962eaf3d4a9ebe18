"""The team store: answers, claims and run records in PostgreSQL (psycopg 3)."""
