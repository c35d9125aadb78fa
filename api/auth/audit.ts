/**
 * One audit line per change request: who, what, which host, outcome. Built
 * from the route and the principal only, never from headers or the body, so
 * no token, password or user data can reach it.
 */
import { appendFileSync } from 'node:fs';

export interface AuditRecord {
  time: string;
  subject: string;
  via: string;
  method: string;
  route: string;
  namespace?: string;
  name?: string;
  status: number;
  outcome: 'ok' | 'denied' | 'failed';
}

export type AuditSink = (record: AuditRecord) => void;

/** JSON lines to a file (METALFLOW_API_AUDIT_LOG) or, without one, stdout. */
export function auditSink(file: string | undefined): AuditSink {
  return (record) => {
    const line = `${JSON.stringify({ audit: record })}\n`;
    if (file) appendFileSync(file, line);
    else process.stdout.write(line);
  };
}
