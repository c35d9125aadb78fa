/** The stack the project starts registers the search attributes the workflows write. */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { REPO_ROOT } from '../../config/env';
import { SEARCH_ATTRIBUTES } from '../../model/search-attributes';
import { TEMPORAL_ADDRESS } from '../support/env';

describe('local stack', () => {
  it('registers every custom search attribute the workflows use, with its type', async () => {
    const listed = readFileSync(join(REPO_ROOT, 'scripts', 'search-attributes.txt'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    const fileType = { KEYWORD: 'Keyword', INT: 'Int', BOOL: 'Bool' } as const;
    expect(listed.sort()).toEqual(Object.values(SEARCH_ATTRIBUTES).map((a) => `${a.name}=${fileType[a.type]}`).sort());

    const connection = await Connection.connect({ address: TEMPORAL_ADDRESS });
    try {
      const res = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
      for (const attr of Object.values(SEARCH_ATTRIBUTES)) {
        // IndexedValueType 2 is KEYWORD, 3 INT, 5 BOOL.
        expect(res.customAttributes?.[attr.name], attr.name).toBe({ KEYWORD: 2, INT: 3, BOOL: 5 }[attr.type]);
      }
    } finally {
      await connection.close();
    }
  });

  it('refuses to start a service on a taken port, naming the port and the service', async () => {
    const squatter = createServer();
    await new Promise<void>((r) => squatter.listen(0, '127.0.0.1', r));
    const port = (squatter.address() as { port: number }).port;
    try {
      const res = spawnSync('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), 'start', 'sushy'], {
        env: { ...process.env, METALFLOW_STATE_DIR: mkdtempSync(join(tmpdir(), 'mf-stack-')), SUSHY_PORT: String(port) },
        encoding: 'utf8',
      });
      expect(res.status).not.toBe(0);
      expect(res.stderr).toMatch(new RegExp(`sushy: port ${port} .* is already in use`));
    } finally {
      squatter.close();
    }
  });

  it('says which binary is missing and how to install it', () => {
    const res = spawnSync('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), 'start', 'temporal'], {
      env: { ...process.env, METALFLOW_STATE_DIR: mkdtempSync(join(tmpdir(), 'mf-stack-')), METALFLOW_VENV: '/nonexistent-venv', TEMPORAL_PORT: '27999', TEMPORAL_UI_PORT: '27998' },
      encoding: 'utf8',
    });
    expect(res.status).not.toBe(0);
    expect(res.stderr).toMatch(/not found; run scripts\/install\.sh/);
  });
});
