"""The insurer's systems for the claim example: a few fixed policies, a coverage table and a claim
register kept in memory, enough to chat with the example."""

POLICIES = {
    "POL-AB123456": {"holder": "Dana Reyes", "plan": "home", "deductible": 250, "active": True},
    "POL-CD654321": {"holder": "Sam Okafor", "plan": "auto", "deductible": 500, "active": True},
    "POL-EF111111": {"holder": "Lee Marsh", "plan": "home", "deductible": 250, "active": False},
}

# what each plan covers, by type of incident
COVERS = {
    "home": {"water damage", "fire", "theft"},
    "auto": {"collision", "theft", "glass"},
}

_CLAIMS: list[dict] = []


def check_coverage(policy_number: str, incident_type: str) -> dict:
    """Whether the policy covers this type of incident, and its deductible."""
    policy = POLICIES.get(policy_number.strip().upper())
    if policy is None:
        raise LookupError(f"no policy {policy_number}")
    kind = incident_type.strip().lower()
    covered = policy["active"] and kind in COVERS[policy["plan"]]
    if not policy["active"]:
        reason = "the policy has lapsed"
    elif covered:
        reason = f"{kind} is covered by the {policy['plan']} plan"
    else:
        reason = f"the {policy['plan']} plan does not cover {kind}"
    return {"covered": covered, "deductible": policy["deductible"], "reason": reason, "holder": policy["holder"]}


def file_claim(policy_number: str, incident_date: str, incident_type: str, description: str) -> dict:
    """Register a claim and return its reference."""
    reference = f"CLM-{len(_CLAIMS) + 1001}"
    _CLAIMS.append({"reference": reference, "policy_number": policy_number.strip().upper(),
                    "incident_date": incident_date, "incident_type": incident_type, "description": description})
    return {"claim_id": reference}
