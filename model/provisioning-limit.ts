/**
 * Metal3's default provisioning limit (BMO's PROVISIONING_LIMIT): hosts busy
 * with Ironic's ramdisk at once. Here, not in workflows/, so the worker's and
 * the configuration's code need not load @temporalio/workflow for it.
 */
export const DEFAULT_PROVISIONING_LIMIT = 20;
