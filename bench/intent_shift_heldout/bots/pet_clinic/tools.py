"""Willow Vets tools (held-out benchmark bot): plain Python data, deterministic, no network.

Every tool follows the ADL return convention: a list whose first item is
{"status": "success" | "error", "msg": ...}, followed by {"arg": name, "value": ...} updates
and optional {"bot": text} messages. Bad input gives an "error" status, never an exception.
"""

OWNERS = {
    "dana whitfield": {
        "Biscuit": {
            "species": "dog", "breed": "beagle", "age": "6 years", "weight_kg": 12.4,
            "vaccinations": [
                {"name": "DHP booster", "given": "14/10/2025", "next_due": "14/10/2026"},
                {"name": "Leptospirosis", "given": "02/03/2026", "next_due": "02/03/2027"},
            ],
            "medication": ["Apoquel 5.4 mg"],
        },
        "Miso": {
            "species": "cat", "breed": "domestic shorthair", "age": "11 years", "weight_kg": 4.1,
            "vaccinations": [
                {"name": "Cat flu and enteritis", "given": "20/06/2026", "next_due": "20/06/2027"},
            ],
            "medication": ["Felimazole 2.5 mg"],
        },
    },
}

SLOTS = {
    "check-up": ("Tuesday 24 November at 10:30", "Dr Amara Osei"),
    "vaccination": ("Monday 23 November at 16:15", "Nurse Tom Reilly"),
    "illness": ("Monday 23 November at 09:10", "Dr Amara Osei"),
}

_VISIT_ALIASES = {
    "checkup": "check-up", "check up": "check-up", "health check": "check-up",
    "vaccine": "vaccination", "vaccines": "vaccination", "booster": "vaccination",
    "sick": "illness", "unwell": "illness", "ill": "illness",
}


def _norm(text) -> str:
    return " ".join(str(text or "").lower().split())


def _pets(owner):
    pets = OWNERS.get(_norm(owner))
    if pets is None:
        raise ValueError(f"I couldn't find an owner called '{owner}'.")
    return pets


def _pet(owner, pet_name):
    pets = _pets(owner)
    wanted = _norm(pet_name)
    for name, record in pets.items():
        if _norm(name) == wanted:
            return name, record
    raise ValueError(
        f"'{pet_name}' is not one of {owner}'s pets (pets: {', '.join(pets)})."
    )


def list_pets(owner: str):
    """List the owner's registered pets.

    Args:
        owner: The owner's full name, e.g. "Dana Whitfield".
    """
    try:
        pets = _pets(owner)
    except ValueError as problem:
        return [{"status": "error", "msg": str(problem)}]
    listing = "; ".join(f"{n} ({r['species']}, {r['breed']})" for n, r in pets.items())
    print(f"Pets: {listing}")
    return [
        {"status": "success", "msg": f"{owner} has {len(pets)} pets: {listing}."},
        {"arg": "pets", "value": list(pets)},
    ]


def get_pet_record(owner: str, pet_name: str):
    """Get a pet's health record: weight, vaccinations (given and next due) and current medication.

    Args:
        owner: The owner's full name.
        pet_name: The pet's name, e.g. "Biscuit".
    """
    try:
        name, record = _pet(owner, pet_name)
    except ValueError as problem:
        return [{"status": "error", "msg": str(problem)}]
    vaccines = "; ".join(
        f"{v['name']} given {v['given']}, next due {v['next_due']}" for v in record["vaccinations"]
    )
    print(f"{name}: {record['species']}, {record['weight_kg']} kg. Vaccinations: {vaccines}. "
          f"Medication: {', '.join(record['medication']) or 'none'}.")
    return [
        {"status": "success", "msg": f"Record of {name} found. Today is 22/11/2026."},
        {"arg": "pet_name", "value": name},
        {"arg": "medication", "value": record["medication"]},
    ]


def order_repeat_prescription(owner: str, pet_name: str, medicine: str):
    """Order a repeat prescription of one of the pet's current medications.

    Args:
        owner: The owner's full name.
        pet_name: The pet's name.
        medicine: The medicine to repeat, as on the record (e.g. "Apoquel 5.4 mg").
    """
    try:
        name, record = _pet(owner, pet_name)
    except ValueError as problem:
        return [{"status": "error", "msg": str(problem)}]
    wanted = _norm(medicine).replace(" ", "")
    for drug in record["medication"]:
        plain = _norm(drug).replace(" ", "")
        if wanted and (wanted == plain or plain.startswith(wanted)):
            return [
                {"status": "success",
                 "msg": f"Repeat prescription of {drug} for {name} ordered; ready to collect "
                        "from reception on Wednesday 25 November after 2 pm."},
                {"arg": "medicine", "value": drug},
            ]
    return [{
        "status": "error",
        "msg": f"{medicine} is not one of {name}'s current medications "
               f"({', '.join(record['medication'])}). A vet must prescribe it at an appointment.",
    }]


def find_slot(pet: str, visit_type: str):
    """Find the earliest free appointment of a kind for a pet.

    Args:
        pet: The pet's name.
        visit_type: "check-up", "vaccination" or "illness".
    """
    kind = _norm(visit_type)
    kind = _VISIT_ALIASES.get(kind, kind)
    if kind not in SLOTS:
        return [{"status": "error", "msg": f"Unknown visit type '{visit_type}'."}]
    slot, vet = SLOTS[kind]
    return [
        {"status": "success", "msg": f"Earliest {kind} slot: {slot} with {vet}."},
        {"arg": "slot", "value": slot},
        {"arg": "vet", "value": vet},
    ]


def reserve_slot(owner: str, pet: str, visit_type: str, slot: str):
    """Book an appointment slot for a pet.

    Args:
        owner: The owner's full name.
        pet: The pet's name.
        visit_type: "check-up", "vaccination" or "illness".
        slot: The slot found by find_slot, e.g. "Tuesday 24 November at 10:30".
    """
    try:
        name, _ = _pet(owner, pet)
    except ValueError as problem:
        return [{"status": "error", "msg": str(problem)},
                {"arg": "status", "value": False},
                {"arg": "confirmation", "value": str(problem)}]
    kind = _VISIT_ALIASES.get(_norm(visit_type), _norm(visit_type))
    known = {s for s, _ in SLOTS.values()}
    if kind not in SLOTS or str(slot) not in known:
        text = f"the {visit_type} slot '{slot}' is not available."
        return [{"status": "error", "msg": text},
                {"arg": "status", "value": False},
                {"arg": "confirmation", "value": text}]
    vet = SLOTS[kind][1]
    text = f"{name} is booked for a {kind} on {slot} with {vet}. Please arrive 10 minutes early."
    return [
        {"status": "success", "msg": text},
        {"arg": "status", "value": True},
        {"arg": "confirmation", "value": text},
    ]
