"""Northbrook Council tools (held-out many-agents benchmark bot): plain Python data,
deterministic, no network.

Every tool follows the ADL return convention: a list whose first item is
{"status": "success" | "error", "msg": ...}, followed by {"arg": name, "value": ...} updates.
Bad input gives an "error" status, never an exception. References are derived from the inputs
(crc32), so a run always gives the same ones.
"""

import zlib

RESIDENT = "sam okafor"
ADDRESS = "14 larch road, nb3 7qt"


def _norm(text) -> str:
    return " ".join(str(text or "").lower().split())


def _ref(prefix: str, *parts) -> str:
    key = "|".join(_norm(p) for p in parts)
    return f"{prefix}-{zlib.crc32(key.encode()) % 900000 + 100000}"


def _err(msg):
    return [{"status": "error", "msg": msg}]


def _resident(resident):
    if _norm(resident) != RESIDENT:
        raise ValueError(f"No account found for '{resident}'.")


# ------------------------------------------------------------------ waste
BIN_PRICES = {"general waste bin": 32, "recycling bin": 0, "food caddy": 0, "garden waste bin": 32}
BULKY = {"furniture": ("Thursday 3 December", "28 pounds"),
         "electrical appliances": ("Friday 4 December", "35 pounds")}
COLLECTIONS = {
    ADDRESS: ("Tuesday", [("Tuesday 1 December", "general waste and food waste"),
                          ("Tuesday 8 December", "recycling, food waste and garden waste")]),
}


def log_missed_collection(address: str, bin_type: str):
    """Report a missed bin collection so the crew returns.

    Args:
        address: The resident's address.
        bin_type: "general waste", "recycling", "food waste" or "garden waste".
    """
    kind = _norm(bin_type)
    if kind not in {"general waste", "recycling", "food waste", "garden waste"}:
        return _err(f"Unknown bin type '{bin_type}'.")
    ref = _ref("MC", address, kind)
    return [
        {"status": "success", "msg": f'Missed {kind} collection at {address} logged as {ref}; return by Thursday 3 December.'},
        {"arg": "reference", "value": ref},
        {"arg": "return_by", "value": 'Thursday 3 December'},
    ]


def quote_bin(bin_type: str, reason: str):
    """Price of a new or replacement bin.

    Args:
        bin_type: "general waste bin", "recycling bin", "food caddy" or "garden waste bin".
        reason: "lost or stolen", "damaged" or "new home".
    """
    kind = _norm(bin_type)
    if kind not in BIN_PRICES:
        return _err(f"Unknown container '{bin_type}'.")
    price = 0 if _norm(reason) == "damaged" else BIN_PRICES[kind]
    charge = "nothing" if price == 0 else f"{price} pounds"
    return [
        {"status": "success", "msg": f'A {kind} ({reason}) costs {charge}.'},
        {"arg": "charge", "value": charge},
    ]


def order_bin(address: str, bin_type: str, reason: str):
    """Order a new or replacement bin (side effect).

    Args:
        address: The delivery address.
        bin_type: The container, as quoted.
        reason: "lost or stolen", "damaged" or "new home".
    """
    kind = _norm(bin_type)
    if kind not in BIN_PRICES:
        return _err(f"Unknown container '{bin_type}'.")
    ref = _ref("BN", address, kind, reason)
    text = f"a {kind} for {address}, order {ref}, delivered by Friday 11 December."
    return [
        {"status": "success", "msg": text},
        {"arg": "confirmation", "value": text},
        {"arg": "reference", "value": ref},
    ]


def quote_bulky_collection(item_group: str):
    """Next date and price of a bulky waste collection.

    Args:
        item_group: "furniture" or "electrical appliances".
    """
    group = _norm(item_group)
    if group not in BULKY:
        return _err(f"Unknown item group '{item_group}'.")
    date, charge = BULKY[group]
    return [
        {"status": "success", "msg": f'Next {group} collection {date}, {charge} for up to 3 items.'},
        {"arg": "date", "value": date},
        {"arg": "charge", "value": charge},
    ]


def book_bulky_collection(address: str, item_group: str, date: str):
    """Book a bulky waste collection (side effect).

    Args:
        address: The collection address.
        item_group: "furniture" or "electrical appliances".
        date: The date quoted.
    """
    group = _norm(item_group)
    if group not in BULKY:
        return _err(f"Unknown item group '{item_group}'.")
    ref = _ref("BW", address, group, date)
    text = f"{group} collection from {address} on {date}, booking {ref}. Put the items out by 7 am."
    return [
        {"status": "success", "msg": text},
        {"arg": "confirmation", "value": text},
        {"arg": "reference", "value": ref},
    ]


def subscribe_garden_waste(address: str, bins: str):
    """Subscribe an address to garden waste collections (side effect).

    Args:
        address: The address.
        bins: Number of bins, "1" or "2".
    """
    try:
        count = int(str(bins).strip())
    except ValueError:
        return _err(f"'{bins}' is not a number of bins.")
    if count not in (1, 2):
        return _err("You can subscribe one or two bins.")
    ref = _ref("GW", address, count)
    text = f"{count} bin(s) subscribed at {address}, {52 * count} pounds, subscription {ref}."
    return [
        {"status": "success", "msg": text},
        {"arg": "confirmation", "value": text},
        {"arg": "reference", "value": ref},
    ]


def get_collection_days(address: str):
    """The bin collection day of an address and the next two collections.

    Args:
        address: The address.
    """
    entry = COLLECTIONS.get(_norm(address))
    if entry is None:
        return _err(f"No collection round found for '{address}'.")
    day, upcoming = entry
    listing = "; ".join(f"{d}: {bins}" for d, bins in upcoming)
    return [
        {"status": "success", "msg": f'Collection day: {day}. Next collections: {listing}. Today is Saturday 28 November.'},
        {"arg": "collection_day", "value": day},
    ]


# ------------------------------------------------------------------ parking
PCN = {"pcn": "NB40217733", "issued": "Monday 23 November", "location": "Station Road car park",
       "amount_due": "35 pounds"}


def find_parking_fines(resident: str):
    """Find the resident's outstanding penalty charge notice (parking fine).

    Args:
        resident: The resident's full name.
    """
    try:
        _resident(resident)
    except ValueError as problem:
        return _err(str(problem))
    return [
        {"status": "success", "msg": f"One open PCN: {PCN['pcn']}, {PCN['issued']}, {PCN['location']}, {PCN['amount_due']} due (reduced rate)."},
        {"arg": "pcn", "value": PCN["pcn"]},
        {"arg": "issued", "value": PCN["issued"]},
        {"arg": "location", "value": PCN["location"]},
        {"arg": "amount_due", "value": PCN["amount_due"]},
    ]


def pay_penalty_charge(pcn: str, amount: str):
    """Pay a penalty charge notice with the card on the account (side effect).

    Args:
        pcn: The PCN number.
        amount: The amount due.
    """
    if _norm(pcn) != _norm(PCN["pcn"]):
        return _err(f"PCN '{pcn}' not found.")
    ref = _ref("PAY", pcn, amount)
    text = f"{amount} paid for PCN {pcn}, receipt {ref}."
    return [
        {"status": "success", "msg": text},
        {"arg": "confirmation", "value": text},
        {"arg": "reference", "value": ref},
    ]


def submit_pcn_challenge(pcn: str, grounds: str):
    """Register an informal challenge to a penalty charge notice.

    Args:
        pcn: The PCN number.
        grounds: "signs unclear", "valid permit or ticket", "loading" or "vehicle stolen".
    """
    if _norm(pcn) != _norm(PCN["pcn"]):
        return _err(f"PCN '{pcn}' not found.")
    ref = _ref("CH", pcn, grounds)
    return [
        {"status": "success", "msg": f'Challenge {ref} registered for {pcn} on grounds: {grounds}.'},
        {"arg": "reference", "value": ref},
    ]


def apply_parking_permit(address: str, permit_type: str):
    """Apply for a resident permit or buy visitor permits for the address's zone.

    Args:
        address: The address.
        permit_type: "resident" or "visitor".
    """
    kind = _norm(permit_type)
    if kind == "resident":
        text = (f"resident permit application {_ref('RP', address)} for zone N3; 85 pounds a year, "
                "we will email you to upload your V5C logbook.")
    elif kind == "visitor":
        text = f"a book of 10 visitor permits for zone N3 ({_ref('VP', address)}), 12 pounds, posted within 3 days."
    else:
        return _err(f"Unknown permit type '{permit_type}'.")
    return [
        {"status": "success", "msg": text},
        {"arg": "confirmation", "value": text},
    ]


def start_blue_badge_application(applicant: str):
    """Start a Blue Badge application.

    Args:
        applicant: "self", "child" or "cared-for person".
    """
    ref = _ref("BB", applicant)
    steps = "We will email a link to upload proof of identity, address and a photo; a decision takes up to 12 weeks."
    return [
        {"status": "success", "msg": f'Blue Badge application {ref} for {applicant}.'},
        {"arg": "reference", "value": ref},
        {"arg": "next_steps", "value": steps},
    ]


def report_vehicle(condition: str):
    """Report an abandoned vehicle.

    Args:
        condition: "untaxed", "damaged or burnt out" or "not moved for weeks".
    """
    ref = _ref("AV", condition)
    return [
        {"status": "success", "msg": f'Abandoned vehicle report {ref} ({condition}).'},
        {"arg": "reference", "value": ref},
    ]


# ------------------------------------------------------------------ council tax
def get_council_tax_account(resident: str):
    """The resident's council tax account for 2026/27.

    Args:
        resident: The resident's full name.
    """
    try:
        _resident(resident)
    except ValueError as problem:
        return _err(str(problem))
    return [
        {"status": "success", "msg": 'Account 60021458, band C, 2026/27 charge 1,874.40 pounds, paid so far 1,312.08 pounds (7 of 10 instalments), balance 562.32 pounds; next instalment 187.44 pounds on 1 December.'},
        {"arg": "band", "value": 'C'},
        {"arg": "balance", "value": '562.32 pounds'},
    ]


def apply_council_tax_discount(resident: str, discount: str):
    """Register a council tax discount or exemption application.

    Args:
        resident: The resident's full name.
        discount: "single person discount", "student exemption" or "disability reduction".
    """
    steps = {
        "single person discount": "The 25% discount will show on a new bill within 10 working days.",
        "student exemption": "Please upload your student certificate from your university within 14 days.",
        "disability reduction": "A visiting officer will contact you to arrange a short home visit.",
    }.get(_norm(discount))
    if steps is None:
        return _err(f"Unknown discount '{discount}'.")
    ref = _ref("CTD", resident, discount)
    return [
        {"status": "success", "msg": f'{discount} application {ref}.'},
        {"arg": "reference", "value": ref},
        {"arg": "next_steps", "value": steps},
    ]


def set_instalment_plan(resident: str, instalments: str, payment_day: str):
    """Change the council tax instalment plan (side effect).

    Args:
        resident: The resident's full name.
        instalments: "10" or "12".
        payment_day: "1", "15" or "28".
    """
    if str(instalments).strip() not in ("10", "12") or str(payment_day).strip() not in ("1", "15", "28"):
        return _err("Instalments must be 10 or 12 and the day 1, 15 or 28.")
    text = (f"from now on your balance is spread over the remaining {instalments}-instalment plan, "
            f"taken on day {payment_day} of each month; a new bill will be posted.")
    return [
        {"status": "success", "msg": text},
        {"arg": "confirmation", "value": text},
    ]


def register_move(resident: str, move_type: str):
    """Record a home move for council tax.

    Args:
        resident: The resident's full name.
        move_type: "moving in", "moving out" or "moving within".
    """
    ref = _ref("MV", resident, move_type)
    steps = "We will email you a form for the moving date and forwarding address; a final or new bill follows."
    return [
        {"status": "success", "msg": f'Move recorded ({move_type}), {ref}.'},
        {"arg": "reference", "value": ref},
        {"arg": "next_steps", "value": steps},
    ]


def start_council_tax_support_claim(resident: str, age_group: str):
    """Start a Council Tax Support claim.

    Args:
        resident: The resident's full name.
        age_group: "pension age" or "working age".
    """
    ref = _ref("CTS", resident, age_group)
    steps = "Please upload proof of income for the last 2 months within 30 days so we can work out your reduction."
    return [
        {"status": "success", "msg": f'Council Tax Support claim {ref} ({age_group}).'},
        {"arg": "reference", "value": ref},
        {"arg": "next_steps", "value": steps},
    ]


# ------------------------------------------------------------------ streets
def report_highway_fault(fault_type: str, detail: str):
    """Report a highway fault (pothole or street light).

    Args:
        fault_type: "pothole" or "streetlight".
        detail: Where the pothole is, or what is wrong with the light.
    """
    kind = _norm(fault_type)
    if kind not in ("pothole", "streetlight"):
        return _err(f"Unknown fault type '{fault_type}'.")
    ref = _ref("HW", kind, detail)
    steps = ("An inspector will assess it within 5 working days; dangerous potholes are made safe within 24 hours."
             if kind == "pothole" else "Our lighting contractor will repair it within 7 working days.")
    return [
        {"status": "success", "msg": f'{kind} reported ({detail}), {ref}.'},
        {"arg": "reference", "value": ref},
        {"arg": "next_steps", "value": steps},
    ]


def report_fly_tipping_incident(waste_type: str):
    """Report fly-tipping.

    Args:
        waste_type: "household", "building" or "hazardous".
    """
    ref = _ref("FT", waste_type)
    steps = ("Hazardous waste is cleared by a specialist team within 24 hours; please do not touch it."
             if _norm(waste_type) == "hazardous" else "It will be cleared within 3 working days.")
    return [
        {"status": "success", "msg": f'Fly-tipping {ref} ({waste_type}).'},
        {"arg": "reference", "value": ref},
        {"arg": "next_steps", "value": steps},
    ]


def report_graffiti_incident(offensive: str):
    """Report graffiti.

    Args:
        offensive: "yes" or "no".
    """
    ref = _ref("GR", offensive)
    steps = ("Offensive graffiti is removed within 24 hours." if _norm(offensive) == "yes"
             else "It will be removed within 10 working days.")
    return [
        {"status": "success", "msg": f'Graffiti {ref}.'},
        {"arg": "reference", "value": ref},
        {"arg": "next_steps", "value": steps},
    ]


def report_drain(severity: str):
    """Report a blocked drain.

    Args:
        severity: "property flooding" or "standing water".
    """
    ref = _ref("DR", severity)
    steps = ("A crew is being sent now; for help tonight ring 0300 555 0199."
             if _norm(severity) == "property flooding" else "The gully will be cleared within 10 working days.")
    return [
        {"status": "success", "msg": f'Drain {ref} ({severity}).'},
        {"arg": "reference", "value": ref},
        {"arg": "next_steps", "value": steps},
    ]


# ------------------------------------------------------------------ library
LOANS = {
    "The Salt Path": "Tuesday 1 December",
    "A Field Guide to British Birds": "Saturday 5 December",
}


def join_library(resident: str, card_type: str):
    """Join the library and issue a card.

    Args:
        resident: The resident's full name.
        card_type: "adult", "child" or "concession".
    """
    if _norm(card_type) not in ("adult", "child", "concession"):
        return _err(f"Unknown card type '{card_type}'.")
    number = _ref("LIB", resident, card_type)
    text = f"Your {card_type} card number is {number}; collect the card from any branch with proof of address."
    return [
        {"status": "success", "msg": text},
        {"arg": "confirmation", "value": text},
        {"arg": "card_number", "value": number},
    ]


def list_loans(resident: str):
    """The books the member has on loan and their due dates.

    Args:
        resident: The member's full name.
    """
    try:
        _resident(resident)
    except ValueError as problem:
        return _err(str(problem))
    listing = "; ".join(f"{t} due {d}" for t, d in LOANS.items())
    return [
        {"status": "success", "msg": f'On loan: {listing}. Today is Saturday 28 November.'},
        {"arg": "titles", "value": list(LOANS)},
    ]


def renew_loan(resident: str, title: str):
    """Renew one book on loan for 3 more weeks.

    Args:
        resident: The member's full name.
        title: The book's title, as listed by list_loans.
    """
    try:
        _resident(resident)
    except ValueError as problem:
        return _err(str(problem))
    for name in LOANS:
        if _norm(name) == _norm(title):
            new = {"The Salt Path": "Tuesday 22 December",
                   "A Field Guide to British Birds": "Saturday 26 December"}[name]
            return [
                {"status": "success", "msg": f'{name} renewed, now due {new}.'},
                {"arg": "title", "value": name},
                {"arg": "due", "value": new},
            ]
    return _err(f"'{title}' is not on loan to {resident}.")


# ------------------------------------------------------------------ housing
def book_housing_repair(address: str, repair: str, urgent: str):
    """Book a council home repair (side effect).

    Args:
        address: The council home's address.
        repair: "heating or hot water", "leak", "damp and mould" or "door or window".
        urgent: "yes" or "no".
    """
    ref = _ref("HR", address, repair, urgent)
    when = ("an emergency repairer will attend within 4 hours" if _norm(urgent) == "yes"
            else "a repairer will visit on Wednesday 9 December between 8 am and 1 pm")
    text = f"{repair} at {address}, job {ref}: {when}."
    return [
        {"status": "success", "msg": text},
        {"arg": "confirmation", "value": text},
        {"arg": "reference", "value": ref},
    ]


def start_housing_application(resident: str, situation: str):
    """Start a housing register application.

    Args:
        resident: The applicant's full name.
        situation: "private renting", "with family or friends" or "council tenant transfer".
    """
    ref = _ref("HREG", resident, situation)
    steps = "Finish the online form within 28 days; we will then assess your priority band."
    return [
        {"status": "success", "msg": f'Housing application {ref} ({situation}).'},
        {"arg": "reference", "value": ref},
        {"arg": "next_steps", "value": steps},
    ]


def get_rent_balance(resident: str):
    """The council tenant's rent account.

    Args:
        resident: The tenant's full name.
    """
    try:
        _resident(resident)
    except ValueError as problem:
        return _err(str(problem))
    return [
        {"status": "success", "msg": 'Weekly rent 128.60 pounds; balance due 257.20 pounds (2 weeks).'},
        {"arg": "weekly_rent", "value": '128.60 pounds'},
        {"arg": "balance", "value": '257.20 pounds'},
    ]


def pay_rent(resident: str, amount: str):
    """Pay council rent with the card on the account (side effect).

    Args:
        resident: The tenant's full name.
        amount: The amount to pay.
    """
    ref = _ref("RENT", resident, amount)
    text = f"{amount} paid to your rent account, receipt {ref}."
    return [
        {"status": "success", "msg": text},
        {"arg": "confirmation", "value": text},
    ]


def refer_housing_options(safe_tonight: str):
    """Refer a resident at risk of homelessness to the housing options team.

    Args:
        safe_tonight: "yes" or "no".
    """
    if _norm(safe_tonight) == "no":
        advice = ("Please come to the Civic Centre today before 4:30 pm, or after hours ring our emergency "
                  "housing line on 0300 555 0199, and we will find you somewhere to stay tonight.")
    else:
        advice = ("I've referred you to our housing options team (referral " + _ref("HO", safe_tonight)
                  + "); an officer will call you within 2 working days. Keep any letters from your landlord.")
    return [
        {"status": "success", "msg": advice},
        {"arg": "advice", "value": advice},
    ]


# ------------------------------------------------------------------ environmental health
def log_noise_complaint(address: str, noise_source: str, happening_now: str):
    """Log a noise complaint.

    Args:
        address: The complainant's address.
        noise_source: "music or parties", "barking dog", "alarm" or "building work".
        happening_now: "yes" or "no".
    """
    ref = _ref("NZ", address, noise_source, happening_now)
    steps = ("The out-of-hours noise team works Friday and Saturday 10 pm to 3 am; ring 0300 555 0177 to ask for a visit now."
             if _norm(happening_now) == "yes"
             else "We will post you diary sheets to record the noise for 2 weeks.")
    return [
        {"status": "success", "msg": f'Noise complaint {ref}.'},
        {"arg": "reference", "value": ref},
        {"arg": "next_steps", "value": steps},
    ]


PESTS = {"rats or mice": ("nothing (free)", "Wednesday 2 December"),
         "wasps": ("65 pounds", "Tuesday 1 December"),
         "bedbugs": ("140 pounds", "Thursday 3 December"),
         "cockroaches": ("140 pounds", "Thursday 3 December")}


def quote_pest_treatment(pest: str):
    """Price and first visit of a pest treatment.

    Args:
        pest: "rats or mice", "wasps", "bedbugs" or "cockroaches".
    """
    entry = PESTS.get(_norm(pest))
    if entry is None:
        return _err(f"Unknown pest '{pest}'.")
    return [
        {"status": "success", "msg": f'{pest}: {entry[0]}, first visit {entry[1]}.'},
        {"arg": "charge", "value": entry[0]},
        {"arg": "visit", "value": entry[1]},
    ]


def book_pest_treatment(address: str, pest: str, visit: str):
    """Book a pest treatment (side effect).

    Args:
        address: The address.
        pest: The pest, as quoted.
        visit: The visit date quoted.
    """
    if _norm(pest) not in PESTS:
        return _err(f"Unknown pest '{pest}'.")
    ref = _ref("PC", address, pest, visit)
    text = f"{pest} treatment at {address} on {visit} between 8 am and 12 noon, booking {ref}."
    return [
        {"status": "success", "msg": text},
        {"arg": "confirmation", "value": text},
    ]


# ------------------------------------------------------------------ registration
def book_registration_appointment(kind: str, detail: str):
    """Book a register office appointment.

    Args:
        kind: "birth", "death", "notice of marriage" or "notice of civil partnership".
        detail: For a birth, whether the baby was born in Northbrook ("yes"/"no"); for a death,
            whether the medical certificate was issued ("yes"/"no"); otherwise the kind again.
    """
    k, d = _norm(kind), _norm(detail)
    if k == "birth":
        if d == "no":
            text = ("A birth must be registered where it happened, but you can make a declaration here: "
                    "I've booked one on Tuesday 1 December at 11:00 at the Civic Centre register office.")
        else:
            text = ("I've booked a birth registration on Tuesday 1 December at 11:00 at the Civic Centre "
                    "register office. Both parents should come if they are not married.")
    elif k == "death":
        if d == "no":
            text = ("We cannot register the death until the certificate reaches us; the register office will "
                    "phone you to book as soon as it arrives.")
        else:
            text = ("I've booked a death registration on Monday 30 November at 14:00 at the Civic Centre "
                    "register office. Please bring the deceased's NHS number if you have it.")
    elif k in ("notice of marriage", "notice of civil partnership"):
        text = (f"I've booked your {k} appointment on Thursday 3 December at 10:00; the fee is 42 pounds each. "
                "Bring passports and proof of address.")
    else:
        return _err(f"Unknown appointment kind '{kind}'.")
    return [
        {"status": "success", "msg": text},
        {"arg": "confirmation", "value": text},
    ]


# ------------------------------------------------------------------ schools
def start_school_application(resident: str, phase: str):
    """Start a school place application.

    Args:
        resident: The parent's full name.
        phase: "reception", "year 7" or "in-year transfer".
    """
    steps = {
        "reception": "List up to 6 primary schools in order of preference by 15 January.",
        "year 7": "List up to 6 secondary schools in order of preference by 31 October.",
        "in-year transfer": "List up to 3 schools; we will reply within 20 school days.",
    }.get(_norm(phase))
    if steps is None:
        return _err(f"Unknown phase '{phase}'.")
    ref = _ref("SA", resident, phase)
    return [
        {"status": "success", "msg": f'School application {ref} ({phase}).'},
        {"arg": "reference", "value": ref},
        {"arg": "next_steps", "value": steps},
    ]


def apply_school_transport(resident: str, reason: str):
    """Apply for home-to-school transport.

    Args:
        resident: The parent's full name.
        reason: "distance" or "special educational needs".
    """
    ref = _ref("ST", resident, reason)
    steps = ("We will check the walking distance and reply within 20 working days."
             if _norm(reason) == "distance"
             else "Please upload your child's EHC plan; the SEND transport team will reply within 20 working days.")
    return [
        {"status": "success", "msg": f'Transport application {ref}.'},
        {"arg": "reference", "value": ref},
        {"arg": "next_steps", "value": steps},
    ]


def check_free_school_meals(resident: str, benefit: str):
    """Check free school meals eligibility and apply.

    Args:
        resident: The parent's full name.
        benefit: "universal credit", "other benefit" or "none".
    """
    b = _norm(benefit)
    if b == "universal credit":
        result = ("If your household's earnings are under 7,400 pounds a year you qualify; I've sent your "
                  "application (" + _ref("FSM", resident) + ") and the school will be told within 5 days.")
    elif b == "other benefit":
        result = "You qualify; I've sent your application (" + _ref("FSM", resident) + ") to the school."
    elif b == "none":
        result = ("Without a qualifying benefit you cannot get free school meals, but every child in "
                  "Reception to Year 2 gets them anyway.")
    else:
        return _err(f"Unknown benefit '{benefit}'.")
    return [
        {"status": "success", "msg": result},
        {"arg": "result", "value": result},
    ]
