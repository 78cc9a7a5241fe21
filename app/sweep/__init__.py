"""`divergence sweep`: a corpus of programs times a matrix of check options, one ordinary check per job.

`corpus` finds the programs, `matrix` multiplies them by options into `jobs`, `state` keeps every job's
outcome in one SQLite file of the sweep's directory (so a killed sweep resumes), `local_pool` and
`ray_pool` run the checks (a warm engine worker on this machine, or Ray actors that each hold one),
`tasks` are what a pool runs (a check, or the minimization of one program per bug), `bugs` groups
divergent jobs by the bug they show, `progress` and `report` show it, `registry` lists the sweeps kept
under the data directory, and `orchestrator` puts it together. Importing this package imports neither
torch nor ray.
"""
