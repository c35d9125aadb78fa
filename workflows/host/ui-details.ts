/**
 * What the Temporal UI shows of a host beside its search attributes: the
 * run's current details (markdown, on the workflow's page) and the static
 * summary a run is started with. Both are payloads: the codec encrypts them
 * like any other, and they hold names, states and the error message only (a
 * status never holds a secret's value).
 */
import type { HostState, OperationRecord } from '../../contracts/host';

/** Markdown interpolation: a host name or error text must not open a link or emphasis. */
const plain = (text: string): string => text.replace(/[\\`*_[\]<>#|]/g, (c) => `\\${c}`);

export function hostCurrentDetails(s: HostState, running: OperationRecord | undefined): string {
  const st = s.status;
  const state = st.provisioning.state || 'unmanaged';
  const lines = [`**${plain(state)}** · power ${st.poweredOn ? 'on' : 'off'} · ${plain(st.operationalStatus || 'OK')}`];
  if (running) {
    const step = running.step ? `, step ${plain(running.step)}` : '';
    lines.push(`running: **${running.kind}** (operation ${running.seq}${step}) since ${running.startedAt}`);
  } else {
    lines.push('running: no operation');
  }
  if (st.errorType) lines.push(`error: **${plain(st.errorType)}** (${st.errorCount}×): ${plain(st.errorMessage)}`);
  // Markdown needs a blank line (or two trailing spaces) to break a line.
  return lines.join('\n\n');
}
