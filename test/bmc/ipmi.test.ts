/**
 * The IPMI client against real IPMI 2.0 (lanplus) peers on 127.0.0.1:
 * - OpenIPMI's ipmi_sim with a chassis_control program that keeps power and
 *   boot state in files (support/chassis-control.sh), user admin/password;
 * - the same simulator without chassis_control (a BMC that cannot do power);
 * - pyghmi's BMC recording the raw boot-flags bytes, because ipmi_sim passes
 *   only the boot device to chassis_control and drops the EFI/persistent bits.
 * ipmitool is Debian's.
 */
import { readFileSync, statSync, existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBmc } from '../../clients/bmc/bmc-client';
import { IpmiError, type BmcError } from '../../clients/bmc/errors';
import { IpmiClient, parseBootParameter, parsePowerStatus, type IpmiClientOptions } from '../../clients/ipmi/client';
import { parseBmcAddress, type BmcAccess } from '../../model/bmc';
import { IPMI_PASSWORD, IPMI_USER, startBootRecorder, startIpmiSim, type BootRecorder, type IpmiSim } from './support/ipmi-sim';

const SIM_PORT = 22623;
const NO_CHASSIS_PORT = 22624;
const RECORDER_PORT = 22625;
const NOTHING_PORT = 22626;

const base: IpmiClientOptions = {
  host: '127.0.0.1',
  port: SIM_PORT,
  username: IPMI_USER,
  password: IPMI_PASSWORD,
  timeoutMs: 10_000,
};

async function failure(p: Promise<unknown>): Promise<BmcError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(IpmiError);
    return err as BmcError;
  }
  throw new Error('expected the call to fail');
}

function access(address: string): BmcAccess {
  const r = parseBmcAddress(address);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value;
}

/** The `set` calls chassis_control received, in order. */
const sets = (sim: IpmiSim) => sim.calls().filter((c) => c.startsWith('set '));

describe('parsing ipmitool output', () => {
  it('reads power status and boot parameter 5', () => {
    expect(parsePowerStatus('Chassis Power is on\n')).toBe('on');
    expect(parsePowerStatus('Chassis Power is off\n')).toBe('off');
    expect(parsePowerStatus('garbage')).toBeUndefined();
    const p = parseBootParameter(
      [
        'Boot parameter version: 1',
        'Boot parameter 5 is valid/unlocked',
        'Boot parameter data: e004000000',
        ' Boot Flags :',
        '   - Boot Flag Valid',
        '   - Options apply to all future boots',
        '   - BIOS EFI boot ',
        '   - Boot Device Selector : Force PXE',
      ].join('\n'),
    );
    expect(p).toEqual({ device: 'pxe', selector: 'Force PXE', persistent: true, uefi: true, valid: true });
  });
});

describe('IPMI against ipmi_sim (OpenIPMI) with a chassis_control program', () => {
  let sim: IpmiSim;
  let client: IpmiClient;

  beforeAll(async () => {
    sim = await startIpmiSim(SIM_PORT);
    client = new IpmiClient(base);
  });
  afterAll(async () => {
    await sim?.stop();
  });

  it('reads the power state and switches power on and off', async () => {
    sim.setPowerFile('0');
    expect(await client.getPowerState()).toBe('off');
    await client.power('on');
    expect(sim.file('power')).toBe('1');
    expect(await client.getPowerState()).toBe('on');
    await client.power('off');
    expect(sim.file('power')).toBe('0');
    expect(await client.getPowerState()).toBe('off');
  });

  it('power cycle turns the chassis off, and ipmi_sim turns it back on a second later', async () => {
    sim.setPowerFile('1');
    sim.clearCalls();
    await client.power('cycle');
    expect(sets(sim)).toEqual(['set power 0']);
    await client.waitForPowerState('on', { timeoutMs: 5_000, pollIntervalMs: 200 });
    expect(sets(sim)).toEqual(['set power 0', 'set power 1']);
  });

  it('power reset pulses the reset line and leaves power on', async () => {
    sim.setPowerFile('1');
    const before = sim.file('reset').split('\n').filter(Boolean).length;
    await client.power('reset');
    expect(sim.file('reset').split('\n').filter(Boolean)).toHaveLength(before + 1);
    expect(await client.getPowerState()).toBe('on');
  });

  it('reboot hard is power off, wait until off, then power on', async () => {
    sim.setPowerFile('1');
    sim.setSoftDelay('0');
    sim.clearCalls();
    await client.reboot('hard', { pollIntervalMs: 200, timeoutMs: 10_000 });
    const calls = sim.calls();
    const off = calls.indexOf('set power 0');
    const on = calls.indexOf('set power 1');
    expect(off).toBeGreaterThanOrEqual(0);
    expect(on).toBeGreaterThan(off);
    // the power state was read (the wait for off) between the two
    expect(calls.slice(off + 1, on)).toContain('get power');
    expect(sim.file('power')).toBe('1');
  });

  it('reboot soft asks the OS to shut down, waits until it is off, then powers on', async () => {
    sim.setPowerFile('1');
    sim.setSoftDelay('1');
    sim.clearCalls();
    const started = Date.now();
    await client.reboot('soft', { pollIntervalMs: 200, timeoutMs: 10_000 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    const calls = sets(sim);
    expect(calls[0]).toBe('set shutdown 1');
    expect(calls.at(-1)).toBe('set power 1');
    expect(calls).not.toContain('set power 0'); // the "OS" powered off by itself
    expect(sim.file('power')).toBe('1');
  });

  it('a soft reboot the OS ignores ends in a timeout error and leaves the host on', async () => {
    sim.setPowerFile('1');
    sim.setSoftDelay('ignore');
    const err = await failure(client.reboot('soft', { pollIntervalMs: 200, offTimeoutMs: 1_500 }));
    expect(err.kind).toBe('timeout');
    expect(err.message).toMatch(/still on .* after asking for off/);
    expect(sim.file('power')).toBe('1');
    sim.setSoftDelay('0');
  });

  it('sets the boot device (pxe, disk, cdrom) and reads it back', async () => {
    await client.setBootDevice('pxe', { uefi: true, persistent: true });
    expect(sim.file('boot')).toBe('pxe');
    expect((await client.getBootParameter()).device).toBe('pxe');
    await client.setBootDevice('disk');
    expect(sim.file('boot')).toBe('default'); // IPMI "force boot from default hard drive"
    expect((await client.getBootParameter()).device).toBe('disk');
    await client.setBootDevice('cdrom', { uefi: true });
    expect(sim.file('boot')).toBe('cdrom');
    expect((await client.getBootParameter()).device).toBe('cdrom');
  });

  it('through the common BmcClient: power, reboot, boot device; no inventory or virtual media', async () => {
    const bmc = await openBmc(access(`ipmi://127.0.0.1:${SIM_PORT}`), { username: IPMI_USER, password: IPMI_PASSWORD }, { timeoutMs: 10_000 });
    try {
      expect(bmc.protocol).toBe('ipmi');
      expect(bmc.getInventory).toBeUndefined();
      expect(bmc.insertMedia).toBeUndefined();
      await bmc.setPower('off', { pollIntervalMs: 200 });
      expect(await bmc.getPower()).toBe('off');
      await bmc.setPower('on', { pollIntervalMs: 200 });
      expect(await bmc.getPower()).toBe('on');
      expect(sim.file('power')).toBe('1');
      sim.setSoftDelay('0');
      await bmc.setPower('soft-off', { pollIntervalMs: 200 });
      expect(sim.file('power')).toBe('0');
      await bmc.reboot('hard', { pollIntervalMs: 200 });
      expect(await bmc.getPower()).toBe('on');
      await bmc.setBootDevice('pxe', { mode: 'UEFI', persistent: true });
      expect(sim.file('boot')).toBe('pxe');
      const err = await failure(bmc.setBootDevice('uefi-http'));
      expect(err.kind).toBe('unsupported');
    } finally {
      await bmc.close();
    }
  });

  it('a wrong password is bad-credentials, and the message never shows it', async () => {
    const secret = 'Not-The-Password-42';
    const err = await failure(new IpmiClient({ ...base, password: secret }).getPowerState());
    expect(err.kind).toBe('bad-credentials');
    expect(err.message).toMatch(/wrong password/);
    expect(err.message).toContain(`127.0.0.1:${SIM_PORT}`);
    expect(err.message).not.toContain(secret);
  });

  it('an unknown user is bad-credentials', async () => {
    const err = await failure(new IpmiClient({ ...base, username: 'nobody' }).getPowerState());
    expect(err.kind).toBe('bad-credentials');
    expect(err.message).toMatch(/unknown user/);
  });

  it('a cipher suite the BMC lacks is unsupported', async () => {
    const err = await failure(new IpmiClient({ ...base, cipherSuite: 17 }).getPowerState());
    expect(err.kind).toBe('unsupported');
    expect(err.message).toMatch(/cipher suite/);
  });

  it('a port where no BMC listens is unreachable, within the timeout', async () => {
    const started = Date.now();
    const err = await failure(new IpmiClient({ ...base, port: NOTHING_PORT, timeoutMs: 5_000, retries: 1 }).getPowerState());
    expect(Date.now() - started).toBeLessThan(5_500);
    expect(err.kind).toBe('unreachable');
    expect(err.message).toContain(`127.0.0.1:${NOTHING_PORT}`);
    expect(err.message).toMatch(/no answer/);
  });

  it('a BMC that stops answering (SIGSTOP) is unreachable within the timeout', async () => {
    sim.pause();
    try {
      // ipmitool would retry for ~10 s; our hard limit ends it at 2 s.
      let started = Date.now();
      let err = await failure(new IpmiClient({ ...base, timeoutMs: 2_000, retries: 10 }).getPowerState());
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(err.kind).toBe('unreachable');
      expect(err.message).toMatch(/no answer .* within 2000 ms \(timeout\)/);
      // ipmitool giving up by itself (1 s x 2 tries) is unreachable too.
      started = Date.now();
      err = await failure(new IpmiClient({ ...base, timeoutMs: 10_000, retries: 1 }).getPowerState());
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(err.kind).toBe('unreachable');
    } finally {
      sim.resume();
    }
    expect(await client.getPowerState()).toMatch(/^(on|off)$/);
  });

  /**
   * Reads /proc/<pid>/<what> of a running ipmitool. The simulator is paused
   * for the call, so ipmitool is certainly alive (waiting for the answer)
   * while we look; it is resumed right after, well within ipmitool's 1 s
   * retransmit timeout. An empty cmdline would mean the exec is not done yet.
   */
  function inspectChild(pid: number, what: 'cmdline' | 'environ'): string {
    const pause = new Int32Array(new SharedArrayBuffer(4));
    for (let i = 0; i < 100; i++) {
      const text = readFileSync(`/proc/${pid}/${what}`, 'utf8');
      if (text) return text;
      Atomics.wait(pause, 0, 0, 5);
    }
    throw new Error(`/proc/${pid}/${what} stayed empty`);
  }

  it('keeps the password off the ipmitool command line (-E, environment of the child only)', async () => {
    let seen: { cmdline: string; environ: string; argv: string[] } | undefined;
    const c = new IpmiClient({
      ...base,
      onSpawn: ({ pid, argv }) => {
        try {
          seen = { argv, cmdline: inspectChild(pid, 'cmdline'), environ: inspectChild(pid, 'environ') };
        } finally {
          sim.resume();
        }
      },
    });
    sim.pause();
    try {
      expect(await c.getPowerState()).toMatch(/^(on|off)$/);
    } finally {
      sim.resume();
    }
    expect(seen).toBeDefined();
    const args = seen!.cmdline.split('\0');
    expect(args[0]).toBe('ipmitool');
    expect(args).toContain('-E');
    expect(args).toEqual(expect.arrayContaining(['-I', 'lanplus', '-C', '3', '-L', 'ADMINISTRATOR', '-U', IPMI_USER]));
    expect(seen!.cmdline).not.toContain(IPMI_PASSWORD);
    expect(seen!.argv.join(' ')).not.toContain(IPMI_PASSWORD);
    expect(seen!.environ.split('\0')).toContain(`IPMI_PASSWORD=${IPMI_PASSWORD}`);
  });

  it('or through a private password file (0600 in a 0700 folder), removed after the call', async () => {
    let file: string | undefined;
    let seen: { file: number; dir: number; cmdline: string; content: string } | undefined;
    const c = new IpmiClient({
      ...base,
      passwordVia: 'file',
      onSpawn: ({ pid, argv }) => {
        try {
          file = argv[argv.indexOf('-f') + 1];
          seen = {
            file: statSync(file!).mode & 0o777,
            dir: statSync(dirname(file!)).mode & 0o777,
            content: readFileSync(file!, 'utf8'),
            cmdline: inspectChild(pid, 'cmdline'),
          };
        } finally {
          sim.resume();
        }
      },
    });
    sim.pause();
    try {
      expect(await c.getPowerState()).toMatch(/^(on|off)$/);
    } finally {
      sim.resume();
    }
    expect(seen).toEqual({ file: 0o600, dir: 0o700, content: IPMI_PASSWORD, cmdline: expect.stringContaining('-f') });
    expect(seen!.cmdline).not.toContain(IPMI_PASSWORD);
    expect(seen!.cmdline.split('\0')).not.toContain('-E');
    expect(existsSync(file!)).toBe(false);
    expect(existsSync(dirname(file!))).toBe(false);
  });
});

describe('IPMI against ipmi_sim without power control', () => {
  let sim: IpmiSim;
  beforeAll(async () => {
    sim = await startIpmiSim(NO_CHASSIS_PORT, { chassisControl: false });
  });
  afterAll(async () => {
    await sim?.stop();
  });

  it('power on and boot device changes are unsupported, and say so', async () => {
    const c = new IpmiClient({ ...base, port: NO_CHASSIS_PORT });
    let err = await failure(c.power('on'));
    expect(err.kind).toBe('unsupported');
    expect(err.message).toMatch(/chassis power on .*invalid data field/i);
    err = await failure(c.setBootDevice('pxe'));
    expect(err.kind).toBe('unsupported');
  });
});

describe('boot flags on the wire (pyghmi BMC recording Set System Boot Options)', () => {
  let rec: BootRecorder;
  beforeAll(async () => {
    rec = await startBootRecorder(RECORDER_PORT);
  });
  afterAll(async () => {
    await rec?.stop();
  });

  // IPMI boot flags parameter 5, byte 1: 0x80 valid, 0x40 persistent, 0x20 EFI;
  // byte 2 bits 2-5: device (1 PXE, 2 disk, 5 CD/DVD).
  it('options=efiboot,persistent set the EFI and persistent bits, plain bootdev neither', async () => {
    const c = new IpmiClient({ ...base, port: RECORDER_PORT });
    rec.clear();
    await c.setBootDevice('pxe', { uefi: true, persistent: true });
    await c.setBootDevice('disk');
    await c.setBootDevice('cdrom', { uefi: true });
    await c.setBootDevice('pxe', { persistent: true });
    const flags = rec.bootFlags().map((d) => [d[1], (d[2]! >> 2) & 0xf]);
    expect(flags).toEqual([
      [0xe0, 1],
      [0x80, 2],
      [0xa0, 5],
      [0xc0, 1],
    ]);
  });

  it('the common interface maps mode UEFI and persistent onto the same bits', async () => {
    const bmc = await openBmc(access(`ipmi://127.0.0.1:${RECORDER_PORT}`), { username: IPMI_USER, password: IPMI_PASSWORD });
    rec.clear();
    await bmc.setBootDevice('cdrom', { mode: 'UEFI', persistent: true });
    await bmc.setBootDevice('pxe');
    expect(rec.bootFlags().map((d) => [d[1], (d[2]! >> 2) & 0xf])).toEqual([
      [0xe0, 5],
      [0x80, 1],
    ]);
    await bmc.close();
  });
});
