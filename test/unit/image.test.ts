import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { httpUrlProblem, validateImage } from '../../model/image';

const checksum = 'a'.repeat(64);

describe('image URLs', () => {
  const accepted = [
    'http://images.example/ubuntu.qcow2',
    'HTTPS://images.example:8443/a/b/ubuntu.qcow2',
    'http://10.0.0.5:8080/x.img',
    'http://[fd00::5]:8080/x.img',
    'http://images.example',
    'http://images.example?x=1',
    'https://bucket.s3.example/img.qcow2?X-Amz-Credential=a%2Fb&X-Amz-Signature=0f1e',
    "http://h/a-b._~!$&'()*+,;=:@/c%20d",
  ];
  it.each(accepted)('accepts %s', (url) => {
    expect(httpUrlProblem(url)).toBeUndefined();
  });

  // [url, words the reason must contain]
  const refused: [string, RegExp][] = [
    ['http:///ubuntu.qcow2', /host is empty/],
    ['http://:8080/ubuntu.qcow2', /host is empty/],
    ['http://', /host is empty/],
    ['http://h:0/x', /out of range; ports are 1-65535/],
    ['http://h:65536/x', /out of range; ports are 1-65535/],
    ['http://h:99999999999/x', /out of range/],
    ['http://h:/x', /port is empty/],
    ['http://h:8o/x', /decimal number 1-65535/],
    ['http://10.0.0.256/x', /not a valid IPv4 address/],
    ['http://bad_host/x', /RFC 1123/],
    ['http://-bad.example/x', /starts or ends with '-'/],
    ['http://fd00::5/x', /IPv6 addresses must be enclosed in brackets/],
    ['http://[fd00::zz]/x', /not a valid IPv6 address/],
    ['http://u:p@h/x', /credentials in the URL/],
    ['oci://quay.example/os/image:tag', /oci:\/\/ names an image, not this/],
    ['file:///var/lib/ironic/images/x.qcow2', /Ironic conductor's own disk/],
    ['ftp://h/x.img', /http:\/\/ or https:\/\/, or pulled from an OCI registry/],
    ['gopher://h/x', /http:\/\/ or https:\/\/, or pulled from an OCI registry/],
    ['glance://1f0d1b2f-0000-4000-8000-000000000000', /http:\/\/ or https:\/\/, or pulled from an OCI registry/],
    ['ubuntu.qcow2', /not an http:\/\/ or https:\/\/ URL/],
    ['1f0d1b2f-0000-4000-8000-000000000000', /not an http:\/\/ or https:\/\/ URL/],
    ['http:/h/x', /not an http:\/\/ or https:\/\/ URL/],
    ['http://h/x y.img', /space, control or non-ASCII/],
    ['http://h/x\u00e9.img', /non-ASCII/],
    ['http://h/x.img#part', /fragment/],
    ['http://h/x%zz', /'%' that is not followed by two hex digits/],
    ['http://h/x"y', /path contains '"'/],
    ['http://h/x?a=<b>', /query string contains '<'/],
  ];
  it.each(refused)('refuses %s', (url, reason) => {
    expect(httpUrlProblem(url)).toMatch(reason);
  });

  it('never quotes the URL back: a pre-signed one is a credential', () => {
    for (const url of ['http://h/x?sig=S3CR3T#frag', 'http://h/S3CR3T/x"y', 'http://h/x?sig=S3CR3T&a=<', 'ftp://h/S3CR3T', 'S3CR3T']) {
      const errors = validateImage({ url, checksum });
      expect(errors).toHaveLength(1);
      expect(JSON.stringify(errors)).not.toContain('S3CR3T');
    }
  });

  it('accepts the web URLs fast-check generates (http and https, no fragment)', () => {
    fc.assert(
      fc.property(fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true }), (url) => {
        expect(httpUrlProblem(url)).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  it('accepts oci:// image references (checksum optional), refuses one without a repository', () => {
    expect(validateImage({ url: 'oci://quay.example/os/image:tag' })).toEqual([]);
    expect(validateImage({ url: 'oci://registry.example:5000/os@sha256:' + checksum })).toEqual([]);
    expect(validateImage({ url: 'oci://quay.example/os/image:tag', checksum })).toEqual([]);
    expect(validateImage({ url: 'oci://quay.example' })).toEqual([{ field: 'spec.image.url', reason: expect.stringMatching(/names no repository/) }]);
    expect(validateImage({ url: 'oci://quay.example/os?x=1' })).toEqual([{ field: 'spec.image.url', reason: expect.stringMatching(/query string/) }]);
    expect(validateImage({ url: 'oci://u:p@quay.example/os' })).toEqual([{ field: 'spec.image.url', reason: expect.stringMatching(/credentials in the URL/) }]);
    expect(validateImage({ url: 'http://h/x.img', checksum: 'oci://h/x' })[0]?.reason).toMatch(/hexadecimal digest|http\(s\)/);
  });

  it('checks a checksum-file URL the same way, on spec.image.checksum', () => {
    expect(validateImage({ url: 'http://h/x.img', checksum: 'http://h/x.img.sha256sum' })).toEqual([]);
    const errors = validateImage({ url: 'http://h/x.img', checksum: 'http://h:0/x.sha256sum' });
    expect(errors).toEqual([{ field: 'spec.image.checksum', reason: expect.stringMatching(/checksum-file URL: port 0 is out of range/) }]);
  });
});
