"""Blood: lab typing results, courier transfers arriving, the hospital's own issue of blood on
arrival, reservations and transfusion (docs/MODEL.md §3.4)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..params import (
    BLOOD_PENDING_CREDIT,
    BLOOD_TYPE_QUERY_MIN,
    BLOOD_UNITS_PER_CASE,
    HOSPITAL_TYPING_MIN,
    O_NEG_RELEASE_MIN,
    TYPE_SPECIFIC_MIN,
)
from ..state import stock_by_type
from ..types import BloodAllocation, Hospital, Patient

if TYPE_CHECKING:
    from ..state import World

COMPATIBLE_DONORS: dict[str, tuple[str, ...]] = {
    "O-": ("O-",),
    "O+": ("O-", "O+"),
    "A-": ("O-", "A-"),
    "A+": ("O-", "O+", "A-", "A+"),
    "B-": ("O-", "B-"),
    "B+": ("O-", "O+", "B-", "B+"),
    "AB-": ("O-", "A-", "B-", "AB-"),
    "AB+": ("O-", "O+", "A-", "A+", "B-", "B+", "AB-", "AB+"),
}


def emergency_group_o(p: Patient) -> tuple[str, ...]:
    """Uncross-matched group O a patient of unknown type may get (O-pos first when safe, to
    spare the scarce O-neg)."""
    return ("O+", "O-") if p.o_pos_safe() else ("O-",)


def results_and_transfers(world: World, t: int) -> None:
    """Tick step 4: blood-type results due now, courier transfers arriving."""
    if world.is_due("labs", t):  # else no result is due (entered by request_blood_type)
        world.clear_due("labs")
        for p in world.patients.values():
            if p.blood_type_ready_at is None or p.blood_type_known:
                continue
            if p.blood_type_ready_at <= t:
                p.blood_type_known = True
                world.event(f"LAB {p.patient_id} blood type {p.blood_type}")
            else:
                world.due("labs", p.blood_type_ready_at)
    if not world.transfers:
        return
    arrived = [tr for tr in world.transfers if tr.arrives_at <= t]
    for tr in arrived:
        world.transfers.remove(tr)
        world.hospitals[tr.to_hospital].blood[tr.blood_type] += tr.units
        world.changed("stock")
        world.event(f"BLOOD {tr.units}u {tr.blood_type} arrived at {tr.to_hospital} from {tr.from_hospital}")


def request_blood_type(world: World, p: Patient) -> None:
    p.blood_type_ready_at = world.clock + BLOOD_TYPE_QUERY_MIN
    world.due("labs", p.blood_type_ready_at)


def in_circulation(world: World) -> dict[str, int]:
    """stock + reserved + in transit + transfused, per type (must equal the initial totals)."""
    totals = stock_by_type(world.hospitals)
    for a in world.allocations:
        totals[a.blood_type] = totals.get(a.blood_type, 0) + a.units
    for tr in world.transfers:
        totals[tr.blood_type] = totals.get(tr.blood_type, 0) + tr.units
    return totals


def readiness(world: World, p: Patient, h: Hospital) -> float:
    """1 if blood reserved by the agent is issued and waiting, 0.5 if still being issued."""
    reserved = agent_blood(world, p, h)
    if not reserved:
        return 0.0
    issued = all(not a.awaiting_sample for a in reserved) and min(a.ready_at for a in reserved) <= world.clock
    return 1.0 if issued else BLOOD_PENDING_CREDIT


def issue_on_arrival(world: World, p: Patient, h: Hospital) -> None:
    """Blood reserved by the agent, else the hospital's own supply: type-specific for a typed
    patient (immediate-spin cross-match on the sample), else uncross-matched group O (O-pos
    unless she is of child-bearing age), else typing then type-specific."""
    reserved = agent_blood(world, p, h)
    if reserved:
        p.blood_ready_at = min(a.ready_at for a in reserved)
        return
    units = BLOOD_UNITS_PER_CASE
    donors = sorted(COMPATIBLE_DONORS[p.blood_type], key=lambda t: (t == "O-", t != p.blood_type))
    type_specific = [t for t in donors if t != "O-"]
    if p.blood_type_known and _reserve_first(world, p, h, type_specific, units):
        p.blood_ready_at = world.clock + TYPE_SPECIFIC_MIN
        return
    if _reserve_first(world, p, h, list(emergency_group_o(p)), units):
        p.blood_ready_at = world.clock + O_NEG_RELEASE_MIN
        return
    if _reserve_first(world, p, h, donors, units):
        typing = 0 if p.blood_type_known else HOSPITAL_TYPING_MIN
        p.blood_ready_at = world.clock + typing + TYPE_SPECIFIC_MIN


def issue_awaiting_sample(world: World, p: Patient, h: Hospital) -> None:
    """Type-specific units reserved before arrival are cross-matched once the sample is in."""
    for a in agent_blood(world, p, h):
        if a.awaiting_sample:
            a.awaiting_sample, a.ready_at = False, world.clock + TYPE_SPECIFIC_MIN


def transfuse(world: World, p: Patient, h: Hospital) -> None:
    """Blood issued for the patient at this hospital is given (treatment or stabilisation)."""
    for a in world.allocations:
        if (
            a.patient_id == p.patient_id
            and a.hospital_id == h.hospital_id
            and not a.used
            and not a.awaiting_sample
            and a.ready_at <= world.clock
        ):
            a.used = True
            p.transfused_units += a.units


def agent_blood(world: World, p: Patient, h: Hospital) -> list[BloodAllocation]:
    return [
        a
        for a in world.allocations
        if a.by_agent and not a.used and a.patient_id == p.patient_id and a.hospital_id == h.hospital_id
    ]


def _reserve_first(world: World, p: Patient, h: Hospital, types: list[str], units: int) -> bool:
    for blood_type in types:
        if h.blood.get(blood_type, 0) >= 1:
            _reserve(world, p, h, blood_type, min(units, h.blood[blood_type]))
            return True
    return False


def _reserve(world: World, p: Patient, h: Hospital, blood_type: str, units: int) -> None:
    h.blood[blood_type] -= units
    world.changed("stock")
    world.allocations.append(
        BloodAllocation(p.patient_id, h.hospital_id, blood_type, units, world.clock, ready_at=world.clock)
    )
