import { describe, expect, it } from 'vitest';
import { inlineConfigDataErrors, parseConfigMapping, userDataProblem } from '../../model/config-data';

const SECRET = 'S3CR3T-value';

describe('networkData / metaData', () => {
  it('reads JSON and YAML mappings alike (CAPM3 renders Metal3Data as YAML)', () => {
    const json = parseConfigMapping('{"links": [{"id": "eth0", "type": "phy"}], "services": []}');
    const yaml = parseConfigMapping('links:\n  - id: eth0\n    type: phy\nservices: []\n');
    expect(json).toEqual({ value: { links: [{ id: 'eth0', type: 'phy' }], services: [] } });
    expect(yaml).toEqual(json);
    expect(parseConfigMapping('base: &b {x: 1}\nother: *b')).toEqual({ value: { base: { x: 1 }, other: { x: 1 } } });
  });

  // [text, words of the reason]
  const refused: [string, RegExp][] = [
    ['', /is empty/],
    ['   \n', /is empty/],
    ['[1, 2]', /must be a mapping .* not a list/],
    ['- a\n- b', /not a list/],
    ['just text', /not a string/],
    ['42', /not a number/],
    ['null', /not null/],
    ['{"links": [}', /neither valid JSON nor valid YAML: .* at line 1, column/],
    [`links:\n  - id: ${SECRET}\n - bad`, /neither valid JSON nor valid YAML/],
    ['a: 1\na: 2', /Map keys must be unique/],
    ['{"a": 1, "a": 2}', /Map keys must be unique/],
    ['a: 1\n---\nb: 2', /holds 2 YAML documents/],
    ['a: !!binary aGVsbG8=', /no JSON form/],
    ['a: !custom x', /not plain JSON or YAML: .*tag/i],
    ['a: *nowhere', /alias|neither valid/],
    ['a:\n\tb: 1', /Tabs are not allowed/],
  ];
  it.each(refused)('refuses %j, saying why', (text, reason) => {
    const parsed = parseConfigMapping(text);
    expect('reason' in parsed && parsed.reason).toMatch(reason);
  });

  it('refuses a billion laughs (alias expansion is bounded)', () => {
    const lol = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 10; i++) lol.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9).fill(`*${String.fromCharCode(96 + i)}`).join(',')}]`);
    const parsed = parseConfigMapping(lol.join('\n'));
    expect('reason' in parsed && parsed.reason).toMatch(/alias/);
  });

  it('never quotes the data back', () => {
    for (const text of [`${SECRET}: [`, `- ${SECRET}`, `a: ${SECRET}\na: 2`, `{"${SECRET}": [}`]) {
      const parsed = parseConfigMapping(text);
      expect('reason' in parsed).toBe(true);
      expect(JSON.stringify(parsed)).not.toContain(SECRET);
    }
  });
});

describe('userData', () => {
  const accepted = [
    '#cloud-config\nusers:\n  - name: core\n',
    '#cloud-config\n',
    '#!/bin/bash\necho hi\n',
    'Content-Type: multipart/mixed; boundary="==B=="\nMIME-Version: 1.0\n\n--==B==--\n',
    '#include\nhttp://config.example/a\n',
    '{"ignition": {"version": "3.4.0"}}',
    'anything else: cloud-init ignores or reads it',
  ];
  it.each(accepted)('accepts %j', (text) => {
    expect(userDataProblem(text)).toBeUndefined();
  });

  const refused: [string, RegExp][] = [
    ['', /is empty/],
    ['#cloud-config\nusers: [\n', /#cloud-config but is neither valid JSON nor valid YAML/],
    ['#cloud-config\n- a\n- b\n', /must be a YAML mapping, not a list/],
    [`{"ignition": {"version": "${SECRET}"}`, /read as JSON .* not valid JSON/],
  ];
  it.each(refused)('refuses %j, saying why, without quoting it', (text, reason) => {
    const problem = userDataProblem(text);
    expect(problem).toMatch(reason);
    expect(problem).not.toContain(SECRET);
  });

  it('names the request field of each bad value', () => {
    expect(inlineConfigDataErrors({ userData: '', networkData: '[]', metaData: 'a: 1' }).map((e) => e.field)).toEqual(['userData', 'networkData']);
  });
});
