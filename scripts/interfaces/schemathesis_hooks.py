"""Schemathesis checks of Tollgate's own, loaded through SCHEMATHESIS_HOOKS by scripts/check-interfaces.py.

schemathesis' `positive_data_acceptance` expects no 400 for a schema-valid request. A webhook's body
carries signatures, JWS and certificates that JSON Schema cannot describe, so a schema-valid body with
a forged signature is rightly refused. What must never happen is a schema-valid request refused for a
reason JSON Schema *can* state (a field missing, empty, of the wrong type or shape): then the document
is looser than the server. This check tells the two apart by the answer's reason code.
"""
import json

import schemathesis

# 400 reason codes for what lies below the document's reach: the bytes of a signature, a JWS, a
# certificate or a bearer token, or a signed field list naming a field the body lacks. Any other 400
# on a schema-valid request is a constraint the document fails to state.
BELOW_SCHEMA = {
    "malformed_jws", "invalid_certificate", "invalid_chain_length", "unsupported_version",
    "malformed_signature", "malformed_token", "missing_signed_field", "invalid_signed_value",
    "unsigned_field",
}


@schemathesis.check
def schema_states_every_constraint(ctx, response, case):
    """A schema-valid request is refused with 400 only for a reason below the document's reach."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 400:
        return None
    try:
        reason = json.loads(response.content).get("error")
    except (ValueError, AttributeError):
        reason = None
    if reason in BELOW_SCHEMA:
        return None
    raise AssertionError(
        f"Schema-valid request refused with 400 {reason!r}: the document does not state this constraint\n"
        f"Body: {response.content[:300]!r}")


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    """`/v1/validate` answers a validator-key URL's refusals 200 for cordova-plugin-purchase (which reads
    only a 200's body) unless the URL asks `errorStatus=http`: schemathesis holds the statuses the
    document lists, so it asks for them. The 200 form is held field by field by ValidateAPITests."""
    if case.path == "/v1/validate":
        case.query = dict(case.query or {}, errorStatus="http")
