import { describe, expect, it } from 'vitest';
import { formatMismatch, sniffFormat } from '../../clients/images/sniff';
import { imageBytes } from '../support/image-bytes';

describe('image format sniffing', () => {
  it('recognises each format by its first bytes', () => {
    expect(sniffFormat(imageBytes.qcow2())).toBe('qcow2');
    expect(sniffFormat(imageBytes.vmdk())).toBe('vmdk');
    expect(sniffFormat(Buffer.from('# Disk DescriptorFile\nversion=1\n'))).toBe('vmdk');
    expect(sniffFormat(imageBytes.vdi())).toBe('vdi');
    expect(sniffFormat(imageBytes.iso())).toBe('iso');
    expect(sniffFormat(imageBytes.raw())).toBe('unknown');
  });

  it('takes an HTML page for what it is, by its bytes or by its content type', () => {
    expect(sniffFormat(imageBytes.html())).toBe('html');
    expect(sniffFormat(Buffer.from('\uFEFF<html lang="en">'))).toBe('html');
    expect(sniffFormat(Buffer.from('<?xml version="1.0"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'))).toBe('html');
    expect(sniffFormat(Buffer.from('Access denied'), 'text/html; charset=utf-8')).toBe('html');
    // A qcow2 served with a wrong content type is still a qcow2.
    expect(sniffFormat(imageBytes.qcow2(), 'text/html')).toBe('qcow2');
  });

  it('an ISO 9660 header needs the whole window: a short read is not an ISO', () => {
    expect(sniffFormat(imageBytes.iso().subarray(0, 0x8000))).toBe('unknown');
  });

  it('says which declared formats the bytes cannot be', () => {
    expect(formatMismatch('raw', 'qcow2')).toBe("spec.image.format is raw, but the image's first bytes are a qcow2 image");
    expect(formatMismatch('qcow2', 'unknown')).toBe("spec.image.format is qcow2, but the image's first bytes are no known image header (raw data)");
    expect(formatMismatch('live-iso', 'qcow2')).toMatch(/live-iso/);
    expect(formatMismatch('vmdk', 'vdi')).toMatch(/a VDI image/);
    expect(formatMismatch('vdi', 'vmdk')).toMatch(/a VMDK image/);
  });

  it('lets through what fits, an unset format, and a hybrid ISO declared raw', () => {
    expect(formatMismatch('raw', 'unknown')).toBeUndefined();
    expect(formatMismatch('raw', 'iso')).toBeUndefined();
    expect(formatMismatch('qcow2', 'qcow2')).toBeUndefined();
    expect(formatMismatch('live-iso', 'iso')).toBeUndefined();
    expect(formatMismatch(undefined, 'qcow2')).toBeUndefined();
    expect(formatMismatch(undefined, 'unknown')).toBeUndefined();
  });
});
