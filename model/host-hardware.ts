/**
 * `status.hardwareDetails`: the inventory an inspection (Ironic's, or the
 * BMC's own in `fast` mode) reports, field-compatible with Metal3's
 * HardwareDetails. Every string bounded (schema-parts.ts); NIC LLDP data kept
 * as reported.
 */
import { Type } from '@sinclair/typebox';
import { MAX_LENGTH, open, passThrough, str } from './schema-parts';


export const HardwareDetailsSchema = Type.Object(
  {
    systemVendor: Type.Optional(
      Type.Object(
        {
          manufacturer: Type.Optional(str(MAX_LENGTH.text)),
          productName: Type.Optional(str(MAX_LENGTH.text)),
          serialNumber: Type.Optional(str(MAX_LENGTH.text)),
        },
        open,
      ),
    ),
    firmware: Type.Optional(
      Type.Object(
        {
          bios: Type.Optional(
            Type.Object(
              {
                date: Type.Optional(str(MAX_LENGTH.word)),
                vendor: Type.Optional(str(MAX_LENGTH.text)),
                version: Type.Optional(str(MAX_LENGTH.text)),
              },
              open,
            ),
          ),
        },
        open,
      ),
    ),
    ramMebibytes: Type.Optional(Type.Integer({ minimum: 0 })),
    nics: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.Optional(str(MAX_LENGTH.text)),
            model: Type.Optional(str(MAX_LENGTH.text)),
            mac: Type.Optional(str(MAX_LENGTH.word)),
            ip: Type.Optional(str(MAX_LENGTH.word)),
            speedGbps: Type.Optional(Type.Integer()),
            vlans: Type.Optional(
              Type.Array(Type.Object({ id: Type.Optional(Type.Integer()), name: Type.Optional(str(MAX_LENGTH.text)) }, open)),
            ),
            vlanId: Type.Optional(Type.Integer()),
            pxe: Type.Optional(Type.Boolean()),
            lldp: Type.Optional(passThrough),
            pciAddress: Type.Optional(str(MAX_LENGTH.word)),
          },
          open,
        ),
      ),
    ),
    storage: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.Optional(str(MAX_LENGTH.text)),
            alternateNames: Type.Optional(Type.Array(str(MAX_LENGTH.path))),
            rotational: Type.Optional(Type.Boolean()),
            type: Type.Optional(str(MAX_LENGTH.word)),
            sizeBytes: Type.Optional(Type.Integer({ minimum: 0 })),
            vendor: Type.Optional(str(MAX_LENGTH.text)),
            model: Type.Optional(str(MAX_LENGTH.text)),
            serialNumber: Type.Optional(str(MAX_LENGTH.text)),
            wwn: Type.Optional(str(MAX_LENGTH.text)),
            wwnVendorExtension: Type.Optional(str(MAX_LENGTH.text)),
            wwnWithExtension: Type.Optional(str(MAX_LENGTH.text)),
            hctl: Type.Optional(str(MAX_LENGTH.word)),
          },
          open,
        ),
      ),
    ),
    cpu: Type.Optional(
      Type.Object(
        {
          arch: Type.Optional(str(MAX_LENGTH.word)),
          model: Type.Optional(str(MAX_LENGTH.text)),
          clockMegahertz: Type.Optional(Type.Number()),
          flags: Type.Optional(Type.Array(str(MAX_LENGTH.word))),
          count: Type.Optional(Type.Integer({ minimum: 0 })),
        },
        open,
      ),
    ),
    hostname: Type.Optional(str(MAX_LENGTH.name)),
  },
  open,
);
