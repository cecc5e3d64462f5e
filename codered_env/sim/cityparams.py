"""The ranges the city generator (``citygen.py``) draws from, each with its source or marked
[design choice]. Prakashnagar (``city.PRAKASHNAGAR``) is a fixed city and reads none of these.

A generated city is a mid-size Indian district town: a hub (the old chowk), a ring of inner
neighbourhoods on spokes, an outer ring joined by arterials, a river on one side, a national
highway entry on the other, one tertiary centre, district hospitals and CHCs, and a 108 fleet
sized from its population. Layout units are drawing coordinates; minutes come from them.
"""

from __future__ import annotations

# --------------------------------------------------------------------------------------------
# Size and population
# --------------------------------------------------------------------------------------------
# Neighbourhood nodes, the hub and the highway entry included (Prakashnagar has 9) [design choice:
# small enough for an all-pairs table per road state, big enough that no two cities look alike].
NEIGHBOURHOODS_RANGE = (7, 12)
HOSPITALS_RANGE = (2, 5)  # from the brief: 2-5 hospitals
# People per neighbourhood, in lakh (100,000): a 7-12 ward town of ~4-11 lakh [design choice;
# Indian urban wards hold 0.2-1 lakh, a neighbourhood here is a few wards].
POPULATION_LAKH_PER_NEIGHBOURHOOD = (0.45, 0.9)

# --------------------------------------------------------------------------------------------
# Fleet: the NHM norm is 1 BLS per lakh and 1 ALS per 5 lakh (PIB 2110385), 1.2 units per lakh;
# many districts run below it (Coimbatore 2022: 57 units for ~35 lakh, ~1.6 per lakh with the
# rural area; The Hindu). Units per lakh are drawn between 0.6 (under-provided) and the norm.
# --------------------------------------------------------------------------------------------
FLEET_PER_LAKH_RANGE = (0.6, 1.2)
FLEET_RANGE = (3, 9)  # from the brief: 3-9 units
# Share of ALS units: richer than the national 1 : 5 by design, as Prakashnagar (2 : 3), so that
# every task has ALS decisions to make [design choice].
ALS_SHARE_RANGE = (0.3, 0.45)

# --------------------------------------------------------------------------------------------
# Hospitals: one tertiary centre (cath lab, thrombectomy, every specialist: the STEMI and stroke
# tasks need a PCI-capable hospital), then district hospitals (IPHS 2007, 101-200+ beds) and
# Community Health Centres (IPHS CHC 2012: 30-bed first-referral units with a blood storage
# unit, ~1 per 1.7 lakh). H2 is always a district hospital; each further hospital is a CHC with
# this probability [design choice: a district town has one district hospital and several CHCs,
# the odd private or second district hospital among them].
# --------------------------------------------------------------------------------------------
CHC_PROBABILITY = 0.55
# Per tier: ED trolleys (capacity), ICU beds, trauma/general theatres, blood units in stock
# [design choice, bracketing Prakashnagar's AIIMS / District Hospital / CHC].
TIER_CAPACITY_RANGE = {1: (7, 10), 2: (5, 7), 3: (3, 5)}
TIER_ICU_BEDS_RANGE = {1: (3, 6), 2: (1, 3), 3: (0, 0)}
TIER_TRAUMA_THEATRES_RANGE = {1: (1, 2), 2: (1, 2), 3: (0, 0)}
TIER_BLOOD_UNITS_RANGE = {1: (36, 52), 2: (16, 28), 3: (3, 6)}
TIER_O_NEG_FLOOR = {1: 2, 2: 1, 3: 1}  # emergency O-neg reserve (params.blood_stock)
# Trolleys free at t0: this many, or one more (the episode's draw between the two; Prakashnagar:
# 2-3 free) [design choice].
FREE_TROLLEYS_RANGE = (2, 3)
# ICU beds taken at t0: from a quarter of the beds to all but one (Prakashnagar: 1-3 of 4, 0-1 of 2).
ICU_FIRST_BUSY_DIVISOR = 4

# --------------------------------------------------------------------------------------------
# Layout (drawing units; x east, y north) and travel minutes
# --------------------------------------------------------------------------------------------
INNER_RADIUS_RANGE = (2.3, 3.4)  # inner neighbourhoods around the hub [design choice]
OUTER_RADIUS_RANGE = (4.3, 5.6)  # outer neighbourhoods [design choice]
ENTRY_RADIUS_RANGE = (5.8, 6.8)  # the highway toll plaza, at the edge of town [design choice]
# Share of the places free to go either way (not riverside, not a CHC) put on the inner ring,
# the tertiary centre always among them, at least 3 [design choice].
INNER_SHARE = 0.55
MIN_INNER_PLACES = 3
ANGLE_JITTER = 0.3  # fraction of a ring slot a place may sit off its slot [design choice]
RIVER_SPREAD_DEG = 40  # riverside places lie within this of the river's bearing [design choice]
ENTRY_OPPOSITE_SPREAD_DEG = 60  # the highway enters on the side away from the river [design choice]
# One layout unit ~0.75 km at 25-35 km/h urban ambulance speeds (Hindustan Times 2022): 1.5 min
# per unit; Prakashnagar's roads run 1.2-1.8 min per unit.
MINUTES_PER_UNIT = 1.5
# Roads wind: route length / straight line 1.0-1.3 in a dense grid [design choice; national
# circuity factors run 1.2-1.4 (Ballou et al. 2002, J. Business Logistics 23:1)].
ROAD_WINDING_RANGE = (1.0, 1.3)
ARTERIAL_SPEED_FACTOR = 0.8  # ring and highway arterials run faster than streets [design choice]
# No road longer than this (~9 min; Prakashnagar's longest, the Ring Road Bypass, is 6 units)
# unless a place would have none [design choice].
MAX_ROAD_UNITS = 6.0
NODE_CLEARANCE = 0.6  # a road passes no other place closer than this [design choice: legibility]
MIN_ROAD_MIN = 2  # the shortest road (Prakashnagar's CHC Lane) [design choice]
RING_LINK_PROBABILITY = 0.8  # a pair of neighbouring inner places is joined [design choice]
SECOND_LINK_PROBABILITY = 0.7  # an outer place also joins its second inner neighbour [design choice]
HUB_LINK_PROBABILITY = 0.3  # an outer place has a direct road to the hub [design choice]
OUTER_ARTERIAL_PROBABILITY = 0.6  # neighbouring outer places are joined [design choice]
OUTER_ARTERIAL_MAX_DEG = 110  # ... when they are at most this far apart around the hub
ENTRY_LINKS_RANGE = (2, 3)  # roads into the toll plaza (Prakashnagar: 3) [design choice]

# --------------------------------------------------------------------------------------------
# Validity: a drawn city is kept only if it passes (else the generator draws again)
# --------------------------------------------------------------------------------------------
# Every place within this many off-peak minutes of some station: the 108 urban promise is
# ~15-20 min call to scene (Uttarakhand 13.5, Himachal 19; ems_domain.md), dispatch included.
RESPONSE_TARGET_MIN = 15
MAX_DRAWS = 50  # draws before the generator gives up (never reached: tests/sim/test_citygen.py)

# --------------------------------------------------------------------------------------------
# Splits for generalisation: city seeds to train on and held-out seeds to evaluate on (disjoint
# ranges, like Procgen's level sets) [design choice].
# --------------------------------------------------------------------------------------------
TRAIN_CITY_SEEDS = range(0, 1000)
TEST_CITY_SEEDS = range(100_000, 100_200)

# --------------------------------------------------------------------------------------------
# Names (fictional; drawn without replacement)
# --------------------------------------------------------------------------------------------
CITY_NAMES = (
    "Chandrapur", "Devgarh", "Suryanagar", "Kamalpur", "Ratnagiri Kalan", "Shivpuri Khurd",
    "Amravati Nagar", "Bhimgarh", "Indrapur", "Jwalapur", "Keshavnagar", "Madhavpur", "Nandgaon",
    "Pushkarpur", "Rudrapur Kalan", "Somnathpur", "Tarapur", "Vidyanagar", "Yashpur", "Gopalganj Kalan",
)
HUB_NAMES = ("Ghanta Ghar Chowk", "Gandhi Chowk", "Subhash Chowk", "Tilak Chowk", "Azad Chowk", "Nehru Chowk")
PLACE_NAMES = {
    "residential": (
        "Shastri Nagar", "Model Town", "Nehru Colony", "Ashok Vihar", "Patel Nagar", "Indira Colony",
        "Saket Enclave", "Vikas Puri", "Kamla Nagar", "Rajendra Nagar", "Govind Puram", "Lajpat Nagar",
        "Ram Bagh", "Shanti Kunj", "Old Town", "Police Lines", "Railway Colony", "Adarsh Nagar",
    ),
    "commercial": (
        "Sadar Bazaar", "MG Road Market", "Cyber Park", "Naya Bazaar", "Kapda Mandi", "Grain Market",
        "Station Bazaar", "City Centre Mall", "Tech Park",
    ),
    "industrial": (
        "MIDC Phase II", "Industrial Estate", "Transport Nagar", "Sugar Mill Area", "Textile Park",
        "Cement Works", "Foundry Nagar",
    ),
    "riverside": ("Nadi Ghat", "Kinara Basti", "Pul Bazaar", "Dhobi Ghat", "Machhli Tola", "Bandh Road"),
}
HIGHWAY_NUMBERS = (19, 27, 44, 48, 52, 58, 65, 130)
TERTIARY_NAMES = ("Government Medical College", "AIIMS {city}", "{city} Institute of Medical Sciences")
DISTRICT_NAMES = (
    "District Hospital", "Civil Hospital", "ESI Hospital", "Railway Hospital", "Sub-District Hospital",
)
ROAD_NAMES = (
    "MG Road", "Station Road", "Nehru Marg", "Tilak Road", "Court Road", "Mall Road", "Canal Road",
    "Jail Road", "College Road", "Hospital Road", "Mandi Road", "Temple Road", "Gurudwara Road",
    "Fort Road", "Circular Road", "Park Street", "Cantonment Road", "Tank Road", "Club Road",
    "Bazaar Lane", "Chandni Gali", "Ambedkar Marg", "Patel Marg", "Bose Road", "Azad Marg",
    "Vivekananda Road", "Rajpath", "Kutchery Road", "Church Road", "Idgah Road", "Mission Road",
    "Lake Road", "Factory Road", "Bypass Lane", "Sabzi Mandi Road", "Ghat Road", "Embankment Road",
    "Riverside Drive", "Link Road", "Naya Marg",
)
