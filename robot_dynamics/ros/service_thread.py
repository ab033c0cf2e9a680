"""Services that never stall the torque loop: a size limit before conversion, and a thread of their own.

rclpy takes a service request in two steps, both holding the GIL:
``rcl_take_request_with_info`` deserializes the DDS sample into the C message
(50-100 ms for a 20 MB request), then the type support's ``convert_to_py``
builds the Python message (about 10 us per trajectory point, 1 s for
100,000 points). A thread of its own is not enough then (the torque loop's
thread waits for the GIL), and a check in the callback comes too late. So:

1. :class:`ServiceThread` serves services on a hidden node of the same
   process (``_<node>_services``, no global arguments, no parameter, rosout or
   type-description services of its own) spun by its own executor in a
   daemon thread, under the main node's service names. That executor takes
   each request through librcl with ctypes, which releases the GIL for the C
   call (:func:`raw_take`), reads the sizes of the C message's sequences
   (ctypes views of the rosidl C structs: a few field reads) and converts it
   only within the limits; the response goes back through
   ``rcl_send_response`` the same way. The torque loop then waits at most
   for a GIL switch (``sys.getswitchinterval()``; dynamics_node sets 1 ms) or
   a conversion within the limit.
2. :func:`guard`, for a service that stays in the main executor
   (``~/identify_payload``): its requests are taken through a Request class
   whose ``_CONVERT_TO_PY`` checks the sizes first (rclpy's take remains).

Over a limit the callback gets an empty request carrying ``refusal`` (the
limit and the size that came), which :func:`refusing` answers with
``success: false``.

Only read-only services belong there: their handlers read the node's current
model (replaced, never changed in place) and must not change the node's state.
"""
import ctypes
import threading

#: Most names, or values of one per-joint array, a JointState request (or a trajectory's joint_names) may give.
MAX_JOINT_VALUES = 4096


class _Seq(ctypes.Structure):            # rosidl sequences and rosidl_runtime_c__String alike
    _fields_ = [('data', ctypes.c_void_p), ('size', ctypes.c_size_t), ('capacity', ctypes.c_size_t)]


class _Time(ctypes.Structure):
    _fields_ = [('sec', ctypes.c_int32), ('nanosec', ctypes.c_uint32)]


class _Header(ctypes.Structure):
    _fields_ = [('stamp', _Time), ('frame_id', _Seq)]


class _JointState(ctypes.Structure):
    _fields_ = [('header', _Header), ('name', _Seq), ('position', _Seq), ('velocity', _Seq), ('effort', _Seq)]


class _JointTrajectory(ctypes.Structure):
    _fields_ = [('header', _Header), ('joint_names', _Seq), ('points', _Seq)]


class _JointStateRequest(ctypes.Structure):          # GravityCompensation, ForwardDynamics, MassMatrix
    _fields_ = [('joint_state', _JointState)]


class _InverseDynamicsRequest(ctypes.Structure):
    _fields_ = [('joint_state', _JointState), ('acceleration', _Seq)]


class _TrajectoryEffortsRequest(ctypes.Structure):
    _fields_ = [('trajectory', _JointTrajectory), ('include_friction', ctypes.c_bool)]


class _IdentifyPayloadRequest(ctypes.Structure):
    _fields_ = [('link', _Seq), ('duration', ctypes.c_double), ('samples', _Seq),
                ('static_poses', ctypes.c_bool), ('apply', ctypes.c_bool)]


def _joint_state_problem(js, what='joint_state'):
    for field in ('name', 'position', 'velocity', 'effort'):
        n = getattr(js, field).size
        if n > MAX_JOINT_VALUES:
            return '%s.%s has %d values, more than the %d a request may give' % (what, field, n, MAX_JOINT_VALUES)
    return None


def _inverse_dynamics_problem(req, limit):
    n = req.acceleration.size
    if n > MAX_JOINT_VALUES:
        return 'acceleration has %d values, more than the %d a request may give' % (n, MAX_JOINT_VALUES)
    return _joint_state_problem(req.joint_state)


def _trajectory_problem(req, limit):
    traj = req.trajectory
    if traj.points.size > limit:
        return ('trajectory has %d points, more than max_request_points (%d); split it, or use dynamics_services '
                'for offline work' % (traj.points.size, limit))
    if traj.joint_names.size > MAX_JOINT_VALUES:
        return ('trajectory.joint_names has %d names, more than the %d a request may give'
                % (traj.joint_names.size, MAX_JOINT_VALUES))
    return None


def _identify_problem(req, limit):
    if req.samples.size > limit:
        return ('samples has %d joint states, more than max_request_points (%d); give a duration to collect '
                'them from joint_states instead' % (req.samples.size, limit))
    return None


def _layouts():
    from robot_dynamics_interfaces.srv import (ForwardDynamics, GravityCompensation, IdentifyPayload,
                                               InverseDynamics, MassMatrix, TrajectoryEfforts)
    js = lambda req, limit: _joint_state_problem(req.joint_state)  # noqa: E731
    return {GravityCompensation: (_JointStateRequest, js), ForwardDynamics: (_JointStateRequest, js),
            MassMatrix: (_JointStateRequest, js), InverseDynamics: (_InverseDynamicsRequest, _inverse_dynamics_problem),
            TrajectoryEfforts: (_TrajectoryEffortsRequest, _trajectory_problem),
            IdentifyPayload: (_IdentifyPayloadRequest, _identify_problem)}


_CONVERT = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p)
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype, _capsule_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype, _capsule_new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_keep = []                               # the ctypes callbacks and capsules live as long as the process


class _GuardedSrv:
    """What ``service.srv_type`` becomes: the guarded Request class, the real Response."""

    def __init__(self, srv_type, request):
        self._srv_type = srv_type
        self.Request = request
        self.Response = srv_type.Response

    def __getattr__(self, name):
        return getattr(self._srv_type, name)


def guard(service, limit):
    """Make the rclpy ``service`` (of a type of :func:`_layouts`) refuse requests over the limits before
    converting them: ``limit()`` gives the largest number of points (trajectory) or samples (identify);
    an oversized request reaches the callback as an empty request with ``refusal`` set (see
    :func:`refusing`). Returns the service."""
    srv_type = service.srv_type
    struct, problem_of = _layouts()[srv_type]
    real = srv_type.Request
    meta = type(real)
    meta.__import_type_support__()
    capsule = meta._CONVERT_TO_PY
    convert = _CONVERT(_capsule_pointer(capsule, _capsule_name(capsule)))

    def convert_to_py(address):
        problem = problem_of(struct.from_address(address), limit())
        if problem is None:
            return convert(address)
        request = Guarded()
        request.refusal = problem
        return request

    callback = _CONVERT(convert_to_py)
    guarded_meta = type(meta.__name__, (meta,), {
        '_CONVERT_TO_PY': _capsule_new(ctypes.cast(callback, ctypes.c_void_p), b'guarded_convert_to_py', None)})
    Guarded = guarded_meta(real.__name__, (real,), {'refusal': None})
    _keep.append((callback, guarded_meta, Guarded))
    service.srv_type = _GuardedSrv(srv_type, Guarded)
    return service


def _librcl():
    """librcl as this process loaded it (through rclpy)."""
    with open('/proc/self/maps') as maps:
        for line in maps:
            path = line.split()[-1]
            if path.endswith('/librcl.so'):
                return ctypes.CDLL(path)
    return ctypes.CDLL('librcl.so')


_rcl = []
_MESSAGE = ctypes.CFUNCTYPE(ctypes.c_void_p)                 # create_ros_message()
_DESTROY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)           # destroy_ros_message(msg)
_FROM_PY = ctypes.PYFUNCTYPE(ctypes.c_bool, ctypes.py_object, ctypes.c_void_p)
_HEADER_BYTES = 256              # rmw_service_info_t is 40 bytes in Jazzy: room to spare
_REQUEST_ID = 16                 # offset of its request_id, after two int64 timestamps


def _capsule(meta, name):
    cap = getattr(meta, name)
    return _capsule_pointer(cap, _capsule_name(cap))


def raw_take(service, problem_of, struct, limit):
    """Functions (take, send) for the services' executor (:class:`_Executor`): the request is taken
    (deserialized into its C message) and the response sent through librcl with ctypes, which
    releases the GIL for the C calls, so not even the DDS deserialization of a huge request holds
    it; the sizes are checked on the C message before any conversion."""
    if not _rcl:
        rcl = _librcl()
        rcl.rcl_take_request_with_info.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        rcl.rcl_send_response.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        _rcl.append(rcl)
    rcl = _rcl[0]
    srv_type = service.srv_type
    req_meta, res_meta = type(srv_type.Request), type(srv_type.Response)
    req_meta.__import_type_support__()
    res_meta.__import_type_support__()
    create_req, destroy_req = _MESSAGE(_capsule(req_meta, '_CREATE_ROS_MESSAGE')), _DESTROY(
        _capsule(req_meta, '_DESTROY_ROS_MESSAGE'))
    to_py = _CONVERT(_capsule(req_meta, '_CONVERT_TO_PY'))
    create_res, destroy_res = _MESSAGE(_capsule(res_meta, '_CREATE_ROS_MESSAGE')), _DESTROY(
        _capsule(res_meta, '_DESTROY_ROS_MESSAGE'))
    from_py = _FROM_PY(_capsule(res_meta, '_CONVERT_FROM_PY'))
    pointer = service.handle.pointer
    refused = type(srv_type.Request.__name__, (srv_type.Request,), {'refusal': None})

    def take():
        """(request, header buffer), or None when there was nothing to take."""
        msg = create_req()
        header = ctypes.create_string_buffer(_HEADER_BYTES)
        try:
            if rcl.rcl_take_request_with_info(pointer, header, msg) != 0:     # RCL_RET_OK
                return None
            problem = problem_of(struct.from_address(msg), limit())
            if problem is None:
                return to_py(msg), header
            request = refused()
            request.refusal = problem
            return request, header
        finally:
            destroy_req(msg)

    def send(response, header):
        msg = create_res()
        try:
            if not from_py(response, msg):
                raise TypeError('cannot convert the response of %s' % service.srv_name)
            rcl.rcl_send_response(pointer, ctypes.addressof(header) + _REQUEST_ID, msg)
        finally:
            destroy_res(msg)

    _keep.append((create_req, destroy_req, to_py, create_res, destroy_res, from_py, refused))
    return take, send


def _executor_class():
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.exceptions import InvalidHandle

    class _Executor(SingleThreadedExecutor):
        """A SingleThreadedExecutor that takes and answers the guarded services through :func:`raw_take`."""

        def _take_service(self, srv):
            raw = getattr(srv, 'raw_take', None)
            if raw is None:
                return super()._take_service(srv)
            take, send = raw
            try:
                with srv.handle:
                    taken = take()
            except InvalidHandle:
                return None
            if taken is None:
                return None

            async def _execute():
                request, header = taken
                response = srv.callback(request, srv.srv_type.Response())
                try:
                    with srv.handle:
                        send(response, header)
                except InvalidHandle:
                    pass
            return _execute
    return _Executor


def refusing(handler):
    """``handler(request, response, ...)`` that first answers a refused (oversized) request with
    ``success: false`` and its reason."""
    def wrapped(request, response, *rest):
        refusal = getattr(request, 'refusal', None)
        if refusal:
            response.success = False
            response.message = 'request refused before conversion: %s' % refusal
            return response
        return handler(request, response, *rest)
    return wrapped


#: [s] longest wait of the services' thread without a request (see ServiceThread._spin).
IDLE_WAIT = 2.0


class ServiceThread:
    """Services of ``node`` served from a hidden node of the same process, in a thread of their own.

    Args:
        node: the main rclpy node (its context, name and namespace; its service names).
    """

    def __init__(self, node):
        from rclpy.node import Node
        from rclpy.parameter import Parameter
        self.node = Node('_%s_services' % node.get_name(), namespace=node.get_namespace(), context=node.context,
                         use_global_arguments=False, enable_rosout=False, start_parameter_services=False,
                         parameter_overrides=[Parameter('start_type_description_service', value=False)])
        self._main = node
        self._stopped = False
        self.executor = _executor_class()(context=node.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, daemon=True, name='services')
        self.thread.start()

    def create_service(self, srv_type, name, callback, limit=lambda: 0):
        """Serve ``name`` (resolved as the main node resolves it: '~/x' is private to it) from this thread,
        guarded (:func:`guard`, :func:`refusing`)."""
        full = self._main.resolve_service_name(name)
        service = self.node.create_service(srv_type, full, refusing(callback))
        struct, problem_of = _layouts()[srv_type]
        service.raw_take = raw_take(service, problem_of, struct, limit)
        return service

    def _spin(self):
        # A request, destroy() (the executor's guard condition) or the context's shutdown wakes the wait;
        # its timeout is only a safety net: each wake-up rebuilds the wait set in Python (some 0.3 % of a
        # core at 10 Hz, measured beside the torque loop).
        context = self.node.context
        while context.ok() and not self._stopped:
            try:
                self.executor.spin_once(timeout_sec=IDLE_WAIT)
            except Exception:
                if context.ok() and not self._stopped:
                    raise

    def destroy(self):
        """Stop the thread and wait for it (at most IDLE_WAIT + 1 s), then destroy the hidden node.

        The join matters: a daemon thread still inside the executor's wait when the interpreter
        finalizes is ended by CPython 3.11-3.13 with pthread_exit, which unwinds through rclpy's C++ and
        aborts the process or crashes it. A bare rclpy node with such a thread, sent SIGINT as soon as
        it spun: 7 of 20 runs crashed on exit without the join, 0 of 20 with it."""
        self._stopped = True
        self.executor.shutdown(timeout_sec=1.0)     # wakes the wait (the executor's guard condition)
        if self.thread is not threading.current_thread():
            self.thread.join(IDLE_WAIT + 1.0)
        self.node.destroy_node()
