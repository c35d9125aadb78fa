/**
 * Every test serves its images from 127.0.0.1, which a worker's default fetch
 * policy refuses: the tests let loopback through explicitly, as the demo does,
 * and never the worker's own listeners.
 */
import { addressPolicy } from '../../clients/images/address-policy';

export const TEST_FETCH_ALLOW = '127.0.0.0/8,::1/128';
/** For worker processes the tests start. */
export const TEST_FETCH_ENV = { METALFLOW_IMAGE_FETCH_ALLOW: TEST_FETCH_ALLOW };
/** For workers built in the test process. */
export const TEST_FETCH_POLICY = addressPolicy({ allow: TEST_FETCH_ALLOW.split(',') });
