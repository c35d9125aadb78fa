"""Loaded by Ironic's Python when IRONIC_MEMO_SESSION_HASH=1 or IRONIC_SQLITE_POOL=1 (scripts/stack.sh, command_of
ironic): test and lab stacks, and the benchmark's agent path for the first (bench/agent-stack.ts); the
benchmark's other profiles and the demo run Ironic's own code.

Two patches, each behind its own setting; neither changes what Ironic does, only the CPU it spends.

IRONIC_MEMO_SESSION_HASH=1: Ironic's Redfish driver builds a
session-cache key for every BMC call by hashing the BMC password with PBKDF2-SHA512 at 600,000 rounds
(ironic/drivers/modules/redfish/utils.py, SessionCache), some 0.5 s of CPU each on a 2-core machine; Ironic 39
has no setting for it. The hash of the same password and address is the same every time, so here it is
computed once per (password, address) and remembered: what Ironic sends to the BMC and what it keeps are
unchanged, only the CPU it spends computing the same key again is not.

IRONIC_SQLITE_POOL=1: a pool of SQLite connections instead of a new one per database session. oslo.db gives a
SQLite file database SQLAlchemy's NullPool (oslo_db/sqlalchemy/engines.py, `_init_connection_args` for
sqlite), so every session of Ironic's opens a connection: sqlite3.connect, SQLite parsing the schema again,
oslo.db's connect listener (the regexp function, PRAGMA synchronous, PRAGMA foreign_keys), then closes it;
some 15 % of the test stack's Ironic CPU. Here the engine oslo.db builds for a SQLite file gets a QueuePool
instead (POOL_SIZE kept, any number more opened and closed as NullPool does, so no session ever waits for a
connection); a node GET or PATCH then costs Ironic some 15-20 % less CPU (docs/testing.md, "How long it takes").
Why Ironic cannot tell the difference:
- Per connection settings: oslo.db's and Ironic's listeners are left as they are. The "connect" ones (regexp,
  synchronous, foreign_keys, the pid guard) run once per SQLite connection, which is when they take effect:
  they hold for as long as the connection lives. Ironic's PRAGMA journal_mode=WAL is an "engine_connect"
  listener, so it still runs on every session; WAL is recorded in the database file anyway.
- Transactions: oslo.db sets isolation_level=None and emits BEGIN itself when a session begins, unless the
  connection's info says one is open; its commit/rollback listeners clear that mark. That info lives with the
  pooled connection, so on every return to the pool the mark is cleared here as well (a "checkin" listener),
  after SQLAlchemy's reset on return has rolled back whatever the session left open (sqlite3's rollback()
  ends an open transaction even with isolation_level=None). Each session thus starts as on a new
  connection: no transaction open, BEGIN emitted.
- Threads: Ironic 39 runs its API and conductor work on native threads, and a pool hands a connection to
  whichever thread checks it out next, so connections are opened with check_same_thread=False (oslo.db does
  the same for in-memory databases). A pooled connection is used by one thread at a time (checked out, used,
  returned), and Python's sqlite3 is built serialized (sqlite3.threadsafety 3).
- Processes: Ironic's launcher forks its worker. oslo.db's pid guard already refuses a connection made in
  another process; in addition, a forked child drops the pool it inherited without closing the parent's
  connections (SQLAlchemy's engine.dispose(close=False)), as SQLAlchemy advises for fork.
- Other processes (ironic-dbsync, an empty-database restart of the stack): they run while this Ironic is
  stopped or in another process; SQLite sees another process's schema change on the next statement.
"""
import functools
import hashlib
import os
import sys

_pbkdf2_hmac = hashlib.pbkdf2_hmac


@functools.lru_cache(maxsize=4096)
def _remembered(hash_name, password, salt, iterations, dklen):
    return _pbkdf2_hmac(hash_name, password, salt, iterations, dklen)


def pbkdf2_hmac(hash_name, password, salt, iterations, dklen=None):
    return _remembered(hash_name, bytes(password), bytes(salt), iterations, dklen)


if os.environ.get("IRONIC_MEMO_SESSION_HASH") == "1":
    hashlib.pbkdf2_hmac = pbkdf2_hmac


POOL_SIZE = 10
_ENGINES_MODULE = "oslo_db.sqlalchemy.engines"


def _forget_transaction(dbapi_connection, connection_record):
    connection_record.info.pop("in_transaction", None)


def _pool_sqlite_files(engines):
    """Wrap oslo.db's create_engine so a SQLite file database gets a QueuePool instead of NullPool."""
    import weakref

    from sqlalchemy import event, pool

    made = weakref.WeakSet()
    original_create_engine = engines.create_engine
    original_target = engines._create_engine

    def pooled_target(url, **engine_args):
        if not (url.drivername.startswith("sqlite") and engine_args.get("poolclass") is pool.NullPool):
            return original_target(url, **engine_args)
        engine_args["poolclass"] = pool.QueuePool
        engine_args["pool_size"] = POOL_SIZE
        engine_args["max_overflow"] = -1
        engine_args["connect_args"]["check_same_thread"] = False
        engine, event_target = original_target(url, **engine_args)
        event.listen(event_target, "checkin", _forget_transaction)
        made.add(event_target)
        return engine, event_target

    def create_engine(*args, **kwargs):
        kwargs.setdefault("_engine_target", pooled_target)
        return original_create_engine(*args, **kwargs)

    def drop_inherited_pools():
        for engine in list(made):
            engine.dispose(close=False)

    os.register_at_fork(after_in_child=drop_inherited_pools)
    engines.create_engine = create_engine


class _PatchOnImport:
    """Patches oslo.db's engines module as it is imported (importing oslo.db here would slow every Python that
    inherits this PYTHONPATH)."""

    def find_spec(self, name, path=None, target=None):
        if name != _ENGINES_MODULE:
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _pool_sqlite_files(module)

        spec.loader.exec_module = exec_and_patch
        return spec


if os.environ.get("IRONIC_SQLITE_POOL") == "1":
    sys.meta_path.insert(0, _PatchOnImport())
