"""Test-session settings shared by every test module."""
import os

# Keep DDS discovery on loopback even when pytest is run without scripts/test.sh
# (Fast DDS otherwise announces itself by multicast on every interface).
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
