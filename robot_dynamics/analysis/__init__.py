"""The analysis layer, built on the algorithms: operational space, the
configuration-space form, static wrenches, friction and the dynamic report."""
