"""Engine devices: each one is serviced run-to-completion by the engine loop."""
