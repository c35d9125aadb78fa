/**
 * The kubelet's part, played by a test on a real Node object (no kubelet can
 * run here): the Ready condition with a heartbeat, once or every second.
 */
import { kubectl } from './kube-harness';

export interface PlayedMachine {
  node: string;
  systemUUID: string;
  /**
   * Whether the machine has power: a kubelet runs only then. Without it the played kubelet reports Ready even
   * while the host is off, and a remediation can see its Node back before the host's power-on ran (under load the
   * next remediation's power-off then arrives first and the power-on never happens).
   */
  poweredOn?: () => Promise<boolean>;
}

/** Sets the Node's Ready condition (heartbeat and transition now) and its system UUID. */
export function setReady(name: string, systemUUID: string, status: 'True' | 'False'): void {
  const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const cond = { type: 'Ready', status, reason: status === 'True' ? 'KubeletReady' : 'KubeletNotReady', message: 'set by the test', lastHeartbeatTime: at, lastTransitionTime: at };
  kubectl(['patch', 'node', name, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { nodeInfo: { systemUUID }, conditions: [cond] } })]);
}

/**
 * A running kubelet: reports the Node Ready with a fresh heartbeat every second (while the machine has power,
 * when `m.poweredOn` tells) until `until` settles (a remediation counts only a heartbeat from after the power came back).
 */
export async function kubeletRuns<T>(m: PlayedMachine, until: Promise<T>): Promise<T> {
  let over = false;
  const settled = until.finally(() => {
    over = true;
  });
  while (!over) {
    if (!m.poweredOn || (await m.poweredOn().catch(() => false))) setReady(m.node, m.systemUUID, 'True');
    await Promise.race([settled.catch(() => undefined), new Promise((r) => setTimeout(r, 1000))]);
  }
  return settled;
}
