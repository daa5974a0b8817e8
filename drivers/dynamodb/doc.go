// Package dynamodb is the ndbench driver for Amazon DynamoDB, over aws-sdk-go-v2.
package dynamodb
