"""Tools for the Wanderwise travel insurance claims bot (deterministic, no I/O)."""

TODAY = "2026-12-01"
POLICIES = {
    "WW-482913": {"holder": "Sam Okafor", "plan": "Comprehensive", "valid_until": "2027-03-31",
                  "limits": {"baggage": 1500, "medical": 10000, "cancellation": 3000, "other": 500}},
    "WW-100200": {"holder": "Lena Fischer", "plan": "Basic", "valid_until": "2026-06-30",
                  "limits": {"medical": 5000}},
}
NEXT_STEP = {
    "baggage": "Please upload the airline's Property Irregularity Report.",
    "medical": "Please upload the doctor's or hospital's invoice.",
    "cancellation": "Please upload your booking confirmation and a medical certificate.",
    "other": "A claims handler will contact you within 2 working days.",
}
CLAIMS = {
    "CL-913-MED": "approved; 420 euros paid on 2026-11-20",
    "CL-555-BAG": "waiting for documents: the airline's Property Irregularity Report is missing",
}


def lookup_policy(policy_number: str):
    """Look up a policy by number and check it is still active."""
    p = POLICIES.get((policy_number or "").strip().upper())
    if p is None:
        return [{"status": "error", "msg": "policy not found"}]
    if p["valid_until"] < TODAY:
        return [{"status": "error", "msg": f"policy expired on {p['valid_until']}"}]
    return [{"status": "success", "msg": f"active {p['plan']} policy of {p['holder']}"},
            {"arg": "holder", "value": p["holder"]},
            {"arg": "plan", "value": p["plan"]},
            {"arg": "valid_until", "value": p["valid_until"]}]


def submit_claim(policy_number: str, claim_type: str = "other", amount=0, incident_date: str = ""):
    """File a claim; checks the incident date and the plan's limit for this claim type."""
    p = POLICIES.get((policy_number or "").strip().upper())
    kind = (claim_type or "other").strip().lower()
    try:
        value = float(str(amount).replace(",", "").replace("euros", "").replace("EUR", "").strip())
    except ValueError:
        value = -1
    if p is None:
        reason = "the policy was not found."
    elif not incident_date or str(incident_date) > TODAY:
        reason = "the incident date is missing or in the future."
    elif value <= 0:
        reason = "the amount is missing."
    elif kind not in p["limits"]:
        reason = f"your {p['plan']} plan does not cover {kind} claims."
    elif value > p["limits"][kind]:
        reason = f"the amount is above your {kind} limit of {p['limits'][kind]} euros."
    else:
        claim_id = f"CL-{policy_number.strip()[-3:]}-{kind[:3].upper()}"
        return [{"status": "success", "msg": f"claim {claim_id} filed"},
                {"arg": "claim_id", "value": claim_id},
                {"arg": "next_step", "value": NEXT_STEP[kind]}]
    return [{"status": "error", "msg": reason}, {"arg": "reason", "value": reason}]


def get_claim_status(claim_id: str):
    """Return the status of a claim by its claim number."""
    s = CLAIMS.get((claim_id or "").strip().upper())
    if s is None:
        return [{"status": "error", "msg": f"no claim {claim_id}"}]
    return [{"status": "success", "msg": s}]
