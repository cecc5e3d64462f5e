"""The world's subsystems, one module each, as functions of the ``World`` (state.py) they move.

``tick.tick`` (tick.py) calls one entry point per subsystem, in the order docs/MODEL.md
§4.1 documents. The modules form a layered graph (no import cycles); a module may use those
above it in this list:

- ``vitals``: which vitals band a reserve is in;
- ``travel``: trips over the road network, trip noise, rerouting after a road change;
- ``disruptions``: road closures, congestion, diversions, OR failures, absent specialists;
- ``spawns``: calls and casualties arriving, ids, callbacks after P4 advice;
- ``cascades``: overcrowding diversions, incident escalation and the news cycle;
- ``blood``: lab results, courier transfers, reservations, transfusion;
- ``rooms``: operating rooms and specialists (timers, claims, readiness);
- ``care``: hospital care (admission, treatment start and end, inter-facility transfers);
- ``physiology``: a minute of deterioration, death;
- ``dispatch``: sending a unit to a scene or home, response levels;
- ``scene``: a crew on scene (assessment, on-scene care, leaving for hospital);
- ``ambulances``: units moving, arriving, handing over;
- ``mutual_aid``: units from the neighbouring district arriving.
"""
