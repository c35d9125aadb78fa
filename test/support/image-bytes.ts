/** The first bytes of each image format, as the sniffer and the probe tests serve them. */
export const SAMPLE_BYTES = 65_536;

const filled = (head: Buffer, at = 0, size = SAMPLE_BYTES): Buffer => {
  const b = Buffer.alloc(size, 0x5a);
  head.copy(b, at);
  return b;
};

export const imageBytes = {
  qcow2: (size = SAMPLE_BYTES): Buffer => filled(Buffer.from([0x51, 0x46, 0x49, 0xfb, 0, 0, 0, 3]), 0, size),
  vmdk: (): Buffer => filled(Buffer.from('KDMV', 'latin1')),
  vdi: (): Buffer => {
    const b = filled(Buffer.from('<<< Oracle VM VirtualBox Disk Image >>>\n', 'latin1'));
    Buffer.from([0x7f, 0x10, 0xda, 0xbe]).copy(b, 0x40);
    return b;
  },
  iso: (): Buffer => filled(Buffer.from('\x01CD001\x01', 'latin1'), 0x8000),
  /** An MBR boot sector: what a raw disk image often starts with. */
  raw: (size = SAMPLE_BYTES): Buffer => {
    const b = filled(Buffer.from([0xeb, 0x63, 0x90]), 0, size);
    b[510] = 0x55;
    b[511] = 0xaa;
    return b;
  },
  html: (): Buffer => Buffer.from('\n  <!DOCTYPE html>\n<html><head><title>Sign in</title></head><body><form>…</form></body></html>\n'),
};
