import type {
	IAuthenticateGeneric,
	Icon,
	ICredentialTestRequest,
	ICredentialType,
	INodeProperties,
} from 'n8n-workflow';

// The header and test route are the catalog's (auth.header, auth.testPath in
// nodes/Imgflow/catalog.json); test/catalog.test.js fails when they differ.
export class ImgflowApi implements ICredentialType {
	name = 'imgflowApi';

	displayName = 'Imgflow API';

	icon: Icon = { light: 'file:../icons/imgflow.svg', dark: 'file:../icons/imgflow.dark.svg' };

	documentationUrl = 'https://github.com/imgflow/imgflow/tree/main/definitions/n8n-nodes-imgflow#credential';

	properties: INodeProperties[] = [
		{
			displayName: 'Base URL',
			name: 'baseUrl',
			type: 'string',
			default: 'http://127.0.0.1:8080',
			placeholder: 'https://imgflow.example.com',
			description: 'Address of the imgflow API, without a trailing /v1',
			required: true,
		},
		{
			displayName: 'API Key',
			name: 'apiKey',
			type: 'string',
			typeOptions: { password: true },
			default: '',
			description:
				'Your compression API key (imgflow keys create in a local install). It is sent as the X-API-Key header.',
			required: true,
		},
	];

	authenticate: IAuthenticateGeneric = {
		type: 'generic',
		properties: {
			headers: {
				'X-API-Key': '={{$credentials.apiKey}}',
			},
		},
	};

	test: ICredentialTestRequest = {
		request: {
			baseURL: '={{$credentials.baseUrl.replace(/\\/+$/, "")}}',
			url: '/v1/account',
			method: 'GET',
		},
	};
}
