/**
 * Ironic's 503 answers, byte for byte as the Ironic the stack runs (39.0) writes them: its API formats the
 * exception (ironic/api/method.py format_exception: faultcode, faultstring, debuginfo) and wraps that JSON text
 * in `{"error_message": …}` (ironic/api/middleware/parsable_error.py), each with Python's json.dumps. Made with
 *
 *   .venv/bin/python -c 'import json,sys; from ironic.common import exception as x; from ironic.api import method
 *   try: raise x.ConcurrentActionLimit(task_type="provisioning")
 *   except Exception: print(json.dumps({"error_message": json.dumps(method.format_exception(sys.exc_info()))}))'
 *
 * (and the same for the other two). All three are TemporaryFailure (`code = 503`) in ironic/common/exception.py:
 * the conductor's concurrent action limit (`[conductor] max_concurrent_deploy` for `provisioning`,
 * `max_concurrent_clean` for `unprovisioning` and `cleaning`), no free conductor worker, and no conductor in the
 * hash ring for the node. Each is raised before the request changed anything (a verb whose worker could not be
 * spawned is rolled back). Ironic sends no Retry-After with them.
 */
const body = (faultstring: string): string => `{"error_message": "{\\"faultcode\\": \\"Server\\", \\"faultstring\\": \\"${faultstring}\\", \\"debuginfo\\": null}"}`;

export const concurrentActionLimit = (taskType: 'provisioning' | 'unprovisioning' | 'cleaning' | 'service'): string =>
  body(`Unable to process request at this time. The concurrent action limit for ${taskType} has been reached. Please contact your administrator and try again later.`);

export const NO_FREE_CONDUCTOR_WORKER = body('Requested action cannot be performed due to lack of free conductor workers.');

export const TEMPORARY_FAILURE = body('Resource temporarily unavailable, please retry.');
