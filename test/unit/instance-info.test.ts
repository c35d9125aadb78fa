/** The image's instance_info patch (activities/ironic/deploy.ts): what Metal3 sends, and nothing left of an earlier image. */
import { describe, expect, it } from 'vitest';
import { instanceInfo } from '../../activities/ironic/deploy';

describe('instanceInfo', () => {
  it('sends no image_disk_format for an unset format, and removes one an earlier image left', () => {
    const image = { url: 'http://h/i.img', checksum: 'b'.repeat(64) };
    expect(instanceInfo(image).map((o) => o.path)).not.toContain('/instance_info/image_disk_format');
    expect(instanceInfo(image, { image_disk_format: 'qcow2' })).toContainEqual({ op: 'remove', path: '/instance_info/image_disk_format' });
  });

  it('removes the checksum keys of the other form when the checksum changes form', () => {
    const url = { url: 'http://h/i.img', checksum: 'http://h/SHA256SUMS' };
    const ops = instanceInfo(url, { image_os_hash_algo: 'sha256', image_os_hash_value: 'c'.repeat(64) });
    expect(ops).toContainEqual({ op: 'remove', path: '/instance_info/image_os_hash_algo' });
    expect(ops).toContainEqual({ op: 'remove', path: '/instance_info/image_os_hash_value' });
    expect(ops).toContainEqual({ op: 'add', path: '/instance_info/image_checksum', value: url.checksum });
  });

  it('leaves what the node already has: nothing to write for the same image again', () => {
    const image = { url: 'http://h/i.img', checksum: 'b'.repeat(64), format: 'qcow2' as const };
    const written = Object.fromEntries(instanceInfo(image).map((o) => [o.path.replace('/instance_info/', ''), o.value]));
    expect(instanceInfo(image, written)).toEqual([]);
    expect(instanceInfo({ ...image, url: 'http://h/j.img' }, written)).toEqual([{ op: 'add', path: '/instance_info/image_source', value: 'http://h/j.img' }]);
  });
});
