import { describe, expect, it } from 'vitest';
import { ANNOTATIONS, parseAnnotations } from '../../k8s/controller/annotations';
import { emptyStatus } from '../../model/host';

describe('Metal3 annotations', () => {
  it('reads absent annotations as no request', () => {
    expect(parseAnnotations(undefined)).toEqual({ value: { paused: false, powerOff: {} }, errors: [], warnings: [] });
  });

  it('pauses on presence, whatever the value (CAPM3 writes its own)', () => {
    expect(parseAnnotations({ [ANNOTATIONS.paused]: 'metal3.io/capm3' }).value.paused).toBe(true);
  });

  it("reads detached as Metal3 does: present means detached; arguments that do not decode mean delete, with a warning", () => {
    const FIELD = 'metadata.annotations["baremetalhost.metal3.io/detached"]';
    const read = (raw: string) => parseAnnotations({ [ANNOTATIONS.detached]: raw });
    expect(read('')).toMatchObject({ value: { detached: { deleteAction: 'delete', force: false } }, errors: [], warnings: [] });
    expect(read('{"deleteAction":"delay"}')).toMatchObject({ value: { detached: { deleteAction: 'delay', force: false } }, warnings: [] });
    expect(read('{"force":true}')).toMatchObject({ value: { detached: { deleteAction: 'delete', force: true } }, warnings: [] });
    // Metal3's docs: "the value can be anything"; Go's decoder fails on these and BMO does not delay the delete.
    for (const [raw, why] of [
      ['true', /is not a JSON object/],
      ['yes', /is not valid JSON/],
      ['[]', /is not a JSON object/],
      ['{"force":"yes"}', /"force" is not true or false/],
      ['{"deleteAction":"delay","force":1}', /"force" is not true or false/],
      ['{"deleteAction":"explode"}', /deleteAction "explode" is not "delay": read as "delete"/],
    ] as const) {
      const r = read(raw);
      expect(r.errors, raw).toEqual([]);
      expect(r.value.detached, raw).toEqual({ deleteAction: 'delete', force: false });
      expect(r.warnings[0]?.field, raw).toBe(FIELD);
      expect(r.warnings[0]?.reason, raw).toMatch(why);
    }
    // Go ignores an unknown field; we keep what decoded and say what was ignored.
    const typo = read('{"deleteAction":"delay","when":1}');
    expect(typo.value.detached).toEqual({ deleteAction: 'delay', force: false });
    expect(typo.warnings[0]!.reason).toMatch(/unknown field "when" ignored/);
  });

  it('accepts inspect "disabled" or empty, never a silent default', () => {
    expect(parseAnnotations({ [ANNOTATIONS.inspect]: 'disabled' }).value.inspect).toBe('disabled');
    expect(parseAnnotations({ [ANNOTATIONS.inspect]: '' }).value.inspect).toBe('requested');
    const bad = parseAnnotations({ [ANNOTATIONS.inspect]: 'Disabled' });
    expect(bad.value.inspect).toBeUndefined();
    expect(bad.errors[0]!.reason).toMatch(/"Disabled" is not accepted/);
  });

  it('validates a status to restore against the status schema', () => {
    const status = emptyStatus();
    status.provisioning = { state: 'provisioned', ID: 'abc' };
    expect(parseAnnotations({ [ANNOTATIONS.status]: JSON.stringify(status) }).value.restoreStatus?.provisioning.state).toBe('provisioned');
    const bad = parseAnnotations({ [ANNOTATIONS.status]: JSON.stringify({ ...status, provisioning: { state: 'flying', ID: '' } }) });
    expect(bad.errors.some((e) => e.field.endsWith('.provisioning.state'))).toBe(true);
  });

  it("restores Metal3's own export (user guide example: nulls, an empty image URL) as Metal3 would read it", () => {
    const guide =
      '{"errorCount":0,"errorMessage":"","goodCredentials":{"credentials":{"name":"node-0-bmc-secret","namespace":"metal3"},"credentialsVersion":"1775"},"hardwareProfile":"","lastUpdated":"2022-05-31T06:33:05Z","operationHistory":{"deprovision":{"end":null,"start":null},"inspect":{"end":null,"start":"2022-05-31T06:33:05Z"},"provision":{"end":null,"start":null},"register":{"end":"2022-05-31T06:33:05Z","start":"2022-05-31T06:32:54Z"}},"operationalStatus":"OK","poweredOn":false,"provisioning":{"ID":"8d566f5b-a28f-451b-a70f-419507c480cd","bootMode":"legacy","image":{"url":""},"state":"inspecting"},"triedCredentials":{"credentials":{"name":"node-0-bmc-secret","namespace":"metal3"},"credentialsVersion":"1775"}}';
    const parsed = parseAnnotations({ [ANNOTATIONS.status]: guide });
    expect(parsed.errors).toEqual([]);
    const st = parsed.value.restoreStatus!;
    expect(st.provisioning).toEqual({ ID: '8d566f5b-a28f-451b-a70f-419507c480cd', bootMode: 'legacy', state: 'inspecting' });
    expect(st.operationHistory.deprovision).toEqual({});
    expect(st.goodCredentials?.credentialsVersion).toBe('1775');
    // Metal3 omits operationHistory when empty; it is still a status.
    const { operationHistory: _h, ...bare } = emptyStatus();
    expect(parseAnnotations({ [ANNOTATIONS.status]: JSON.stringify(bare) }).errors).toEqual([]);
  });

  it("accepts the user guide's external inspection example unchanged", () => {
    const guide =
      '{"systemVendor":{"manufacturer":"QEMU", "productName":"Standard PC (Q35 + ICH9, 2009)","serialNumber":""}, "firmware":{"bios":{"date":"","vendor":"","version":""}},"ramMebibytes":4096, "nics":[{"name":"eth0","model":"0x1af4 0x0001","mac":"00:b7:8b:bb:3d:f6", "ip":"172.22.0.64","speedGbps":0,"vlanId":0,"pxe":true}], "storage":[{"name":"/dev/sda","rotational":true,"sizeBytes":53687091200, "vendor":"QEMU", "model":"QEMU HARDDISK","serialNumber":"drive-scsi0-0-0-0", "hctl":"6:0:0:0"}],"cpu":{"arch":"x86_64", "model":"Intel Xeon E3-12xx v2 (IvyBridge)","clockMegahertz":2494.224, "flags":["foo"],"count":4},"hostname":"hwdAnnotation-0"}';
    const parsed = parseAnnotations({ [ANNOTATIONS.inspect]: 'disabled', [ANNOTATIONS.hardwareDetails]: guide });
    expect(parsed.errors).toEqual([]);
    expect(parsed.value.hardwareDetails?.cpu?.count).toBe(4);
    expect(parsed.value.hardwareDetails?.nics?.[0]?.vlanId).toBe(0);
  });

  it('validates external hardware details', () => {
    expect(parseAnnotations({ [ANNOTATIONS.hardwareDetails]: '{"cpu":{"count":8},"ramMebibytes":16384}' }).value.hardwareDetails).toEqual({ cpu: { count: 8 }, ramMebibytes: 16384 });
    const bad = parseAnnotations({ [ANNOTATIONS.hardwareDetails]: '{"ramMebibytes":"lots"}' });
    expect(bad.errors[0]!.field).toMatch(/hardwaredetails"\]\.ramMebibytes$/);
  });

  it('reads reboot.metal3.io (one-shot) and reboot.metal3.io/<key> (power off) as Metal3 does', () => {
    const r = parseAnnotations({
      [ANNOTATIONS.reboot]: '',
      'reboot.metal3.io/remediation': '{"mode":"hard"}',
      'reboot.metal3.io/upgrade': '{"mode":"soft","force":true}',
      'reboot.metal3.io/plain': '{}',
    });
    expect(r.errors).toEqual([]);
    expect(r.value.reboot).toEqual({ mode: 'soft' });
    expect(r.value.powerOff).toEqual({ remediation: 'hard', upgrade: 'soft', plain: 'soft' });
    expect(parseAnnotations({ [ANNOTATIONS.reboot]: '{"mode":"hard"}' }).value.reboot).toEqual({ mode: 'hard' });
  });

  it('reads a reboot value that does not parse as soft, as Metal3 does, and says so', () => {
    const notJson = parseAnnotations({ [ANNOTATIONS.reboot]: 'hard' });
    expect(notJson.errors).toEqual([]);
    expect(notJson.value.reboot).toEqual({ mode: 'soft' });
    expect(notJson.warnings).toEqual([{ field: 'metadata.annotations["reboot.metal3.io"]', reason: expect.stringMatching(/^is not valid JSON .*: read as a soft reboot, as Metal3 reads it/) }]);
    const mode = parseAnnotations({ 'reboot.metal3.io/x': '{"mode":"Hard"}' });
    expect(mode.value.powerOff).toEqual({ x: 'soft' });
    expect(mode.warnings[0]!.reason).toMatch(/mode "Hard" is neither "hard" nor "soft": read as a soft reboot/);
    expect(parseAnnotations({ [ANNOTATIONS.reboot]: '["hard"]' }).warnings[0]!.reason).toMatch(/is not a JSON object/);
    expect(parseAnnotations({ 'reboot.metal3.io/x': '{"mode": 1}' }).value.powerOff).toEqual({ x: 'soft' });
    // Go decodes the mode and ignores the unknown field or fails only on "force": the hard reboot stands.
    const extra = parseAnnotations({ [ANNOTATIONS.reboot]: '{"mode":"hard","when":"now"}' });
    expect(extra.value.reboot).toEqual({ mode: 'hard' });
    expect(extra.warnings[0]!.reason).toMatch(/unknown field "when" ignored/);
    const force = parseAnnotations({ [ANNOTATIONS.reboot]: '{"mode":"hard","force":"yes"}' });
    expect(force.value.reboot).toEqual({ mode: 'hard' });
    expect(force.warnings[0]!.reason).toMatch(/"force" must be true or false: ignored/);
  });

  it('keyed power-off requests parse for any host (on a disablePowerOff host the workflow reads them as a reboot)', () => {
    const r = parseAnnotations({ 'reboot.metal3.io/k': '' });
    expect(r.errors).toEqual([]);
    expect(r.value.powerOff).toEqual({ k: 'soft' });
  });
});
