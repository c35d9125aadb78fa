/** Metal3's HostFirmwareSettings, FirmwareSchema and HostFirmwareComponents CRDs, converted from model/firmware-settings.ts and model/firmware-components.ts. */
import { FIRMWARE, FirmwareSchemaSpecSchema, HostFirmwareSettingsSpecSchema, HostFirmwareSettingsStatusSchema } from '../../model/firmware-settings';
import { COMPONENTS, HostFirmwareComponentsSpecSchema, HostFirmwareComponentsStatusSchema } from '../../model/firmware-components';
import { crd, META_PROPS } from './objects';
import { toStructural } from './structural';

const AGE = { name: 'Age', type: 'date', description: 'Time since creation', jsonPath: '.metadata.creationTimestamp' };

export function hostFirmwareSettingsCrd(): Record<string, unknown> {
  return crd({
    ...FIRMWARE.settings,
    shortNames: [...FIRMWARE.settings.shortNames],
    schema: {
      type: 'object',
      description: "HostFirmwareSettings: a BareMetalHost's BIOS settings (of the same name), desired and as Ironic reports them",
      properties: { ...META_PROPS, spec: toStructural(HostFirmwareSettingsSpecSchema, 'spec'), status: toStructural(HostFirmwareSettingsStatusSchema, 'status') },
    },
    status: true,
    columns: [AGE],
  });
}

export function firmwareSchemaCrd(): Record<string, unknown> {
  return crd({
    ...FIRMWARE.schema,
    shortNames: [],
    schema: {
      type: 'object',
      description: "FirmwareSchema: the BIOS registry (types, limits, read-only, allowable values) of a host's firmware, from Ironic",
      properties: { ...META_PROPS, spec: toStructural(FirmwareSchemaSpecSchema, 'spec') },
    },
    status: false,
    columns: [AGE],
  });
}

export function hostFirmwareComponentsCrd(): Record<string, unknown> {
  return crd({
    ...COMPONENTS,
    shortNames: [],
    schema: {
      type: 'object',
      description: "HostFirmwareComponents: a BareMetalHost's firmware versions (of the same name) as Ironic reports them, and the updates to flash",
      properties: { ...META_PROPS, spec: toStructural(HostFirmwareComponentsSpecSchema, 'spec'), status: toStructural(HostFirmwareComponentsStatusSchema, 'status') },
    },
    status: true,
    columns: [AGE],
  });
}
