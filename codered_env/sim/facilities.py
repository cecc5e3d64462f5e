"""The hospitals and the ambulance fleet of Prakashnagar, the fixed city (generated cities
draw theirs in citygen.py from cityparams.py).

The seeded draws at reset (base load, ICU beds in use, blood-stock jitter) come from the ranges
here; generator.py makes the records.
"""

from __future__ import annotations

from dataclasses import dataclass

from .params import BLOOD_TYPE_FREQUENCY


@dataclass(frozen=True)
class HospitalSpec:
    """One hospital as built at reset (seeded draws come from the ranges)."""

    hospital_id: str
    name: str
    tier: int
    capacity: int  # ED trolleys before it counts as crowded
    base_load: tuple[int, int]  # ED patients already there at t0
    icu_beds: int
    icu_used: tuple[int, int] | None  # ICU beds already taken at t0 (None: no ICU)
    ors: tuple[tuple[str, tuple[str, ...]], ...]  # (or_id, procedures it can host)
    specialists: tuple[str, ...]  # on call, paged from home
    blood: dict[str, int]  # starting units per type (+/- 1 seeded jitter where > 1)


def blood_stock(total: int, o_neg_floor: int, group_o_only: bool = False) -> dict[str, int]:
    """Starting units per type: ``total`` split by the Indian ABO/Rh frequencies
    (``BLOOD_TYPE_FREQUENCY``), with at least ``o_neg_floor`` O-neg units. Design choice: at a
    2 % O-neg share the proportional split would leave most banks without the O-neg that women of
    child-bearing age need uncross-matched, so each keeps a small emergency reserve. A CHC blood
    storage unit holds group O only (IPHS CHC 2012, Annexure 11), split O+/O- by frequency."""
    freq = {t: f for t, f in BLOOD_TYPE_FREQUENCY.items() if not group_o_only or t.startswith("O")}
    scale = total / sum(freq.values(), 0.0)
    stock = {t: round(f * scale) for t, f in freq.items()}
    stock["O-"] = max(stock["O-"], o_neg_floor)
    return stock


# Three tiers after Indian public-hospital norms: an AIIMS-style tertiary centre with a cath lab,
# a district hospital (IPHS 2007, 101-200+ beds) and a Community Health Centre first-referral
# unit with a blood storage fridge (IPHS CHC 2012, Annexure 11).
HOSPITAL_SPECS: tuple[HospitalSpec, ...] = (
    HospitalSpec(
        "H1",
        "AIIMS Prakashnagar",
        1,
        capacity=8,
        base_load=(5, 6),
        icu_beds=4,
        icu_used=(1, 3),
        ors=(
            ("OR1", ("cath_lab", "stroke_intervention")),
            ("OR2", ("trauma_surgery", "general")),
            ("OR3", ("trauma_surgery", "general")),
        ),
        specialists=("cardiology", "neurology", "trauma_surgery", "obstetrics"),
        blood=blood_stock(44, o_neg_floor=2),
    ),
    HospitalSpec(
        "H2",
        "District Hospital",
        2,
        capacity=6,
        base_load=(3, 4),
        icu_beds=2,
        icu_used=(0, 1),
        ors=(("OR1", ("trauma_surgery", "general")), ("OR2", ("trauma_surgery", "general"))),
        specialists=("trauma_surgery", "obstetrics"),
        blood=blood_stock(22, o_neg_floor=1),
    ),
    HospitalSpec(
        "H3",
        "CHC Nadi Ghat",
        3,
        capacity=4,
        base_load=(1, 2),
        icu_beds=0,
        icu_used=None,
        ors=(),
        specialists=(),
        blood=blood_stock(4, o_neg_floor=1, group_o_only=True),
    ),
)

# (unit id, kind, home station). 2 ALS : 3 BLS -- richer in ALS than the national 1 : 5
# (PIB 2110385) by design.
FLEET: tuple[tuple[str, str, str], ...] = (
    ("ALS1", "ALS", "N0"),
    ("ALS2", "ALS", "N6"),
    ("BLS1", "BLS", "N2"),
    ("BLS2", "BLS", "N4"),
    ("BLS3", "BLS", "N8"),
)
