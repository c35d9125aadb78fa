/** The stack the project starts registers the search attributes the workflows write. */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { REPO_ROOT } from '../../config/env';
import { SEARCH_ATTRIBUTES } from '../../types/search-attributes';
import { TEMPORAL_ADDRESS } from '../support/env';

describe('local stack', () => {
  it('registers every custom search attribute the workflows use, as Keyword', async () => {
    const listed = readFileSync(join(REPO_ROOT, 'scripts', 'search-attributes.txt'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    expect(listed.sort()).toEqual(Object.values(SEARCH_ATTRIBUTES).map((a) => `${a.name}=Keyword`).sort());

    const connection = await Connection.connect({ address: TEMPORAL_ADDRESS });
    try {
      const res = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
      for (const attr of Object.values(SEARCH_ATTRIBUTES)) {
        // IndexedValueType 2 is KEYWORD.
        expect(res.customAttributes?.[attr.name], attr.name).toBe(2);
      }
    } finally {
      await connection.close();
    }
  });
});
