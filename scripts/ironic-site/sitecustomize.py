"""Loaded by Ironic's Python when IRONIC_MEMO_SESSION_HASH=1 (scripts/stack.sh): test and lab stacks only.

Ironic's Redfish driver builds a session-cache key for every BMC call by hashing the BMC password with
PBKDF2-SHA512 at 600,000 rounds (ironic/drivers/modules/redfish/utils.py, SessionCache), some 0.5 s of CPU
each on a 2-core machine; Ironic 39 has no setting for it. The hash of the same password and address is the
same every time, so here it is computed once per (password, address) and remembered: what Ironic sends to
the BMC and what it keeps are unchanged, only the CPU it spends computing the same key again is not.
"""
import functools
import hashlib

_pbkdf2_hmac = hashlib.pbkdf2_hmac


@functools.lru_cache(maxsize=4096)
def _remembered(hash_name, password, salt, iterations, dklen):
    return _pbkdf2_hmac(hash_name, password, salt, iterations, dklen)


def pbkdf2_hmac(hash_name, password, salt, iterations, dklen=None):
    return _remembered(hash_name, bytes(password), bytes(salt), iterations, dklen)


hashlib.pbkdf2_hmac = pbkdf2_hmac
